package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// annotationDerived marks an object the loader made because the List's pods name it but the List
// lacks it; its value says from what.
const annotationDerived = "planner.io/derived"

// deriveOwners returns the workload owners the List's pods name as their controller but the List
// lacks, as `kubectl get nodes,pods,pdb` snapshots do. Without them the garbage collector would
// delete the pods as orphans, and the disruption controller could not find the scale a budget
// with maxUnavailable or a percentage needs. Derived are the owners the controllers leave alone
// once their pods exist:
//
//   - a ReplicaSet: replicas = its pods (pending ones too), selector = the labels all of them share;
//   - a StatefulSet whose pods are named <name>-0 ... <name>-(n-1): replicas n, OnDelete updates
//     (the controller only labels the pods with their identity, as a real one has);
//   - a DaemonSet (no DaemonSet controller runs here: it is only the pods' owner);
//   - a Job with a manual selector, parallelism = its pods not yet ended and no completion count:
//     the Job controller then wants exactly the pods it has (it counts no pod as ended, since the
//     pods carry no tracking finalizer), creates none and deletes none, and replaces one that is
//     evicted, as it would. Its template restarts OnFailure when all its pods do, else Never (a
//     Job's template allows no other; the pods keep their own).
//
// An owner is not derived when its pods share no label, or another pod in the namespace would
// match its selector (the controller would adopt it and change the replica count); its pods'
// references are then dropped like any other missing owner's.
func deriveOwners(items []listItem) []listItem {
	present := map[ownerKey]bool{}
	for _, item := range items {
		if item.Object != nil {
			present[ownerKey{item.Kind, item.Namespace, item.Name}] = true
		}
	}
	groups := map[ownerKey][]*corev1.Pod{}
	var keys []ownerKey
	podsWith := labelIndex{}
	for _, item := range items {
		pod, ok := item.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		podsWith.add(pod)
		ref := metav1.GetControllerOf(pod)
		if ref == nil {
			continue
		}
		key := ownerKey{ref.Kind, pod.Namespace, ref.Name}
		if present[key] || !derivable[ref.Kind] {
			continue
		}
		if _, seen := groups[key]; !seen {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], pod)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		return a.Namespace+"/"+a.Kind+"/"+a.Name < b.Namespace+"/"+b.Kind+"/"+b.Name
	})
	var derived []listItem
	for _, key := range keys {
		pods := groups[key]
		selector := sharedLabels(pods)
		if len(selector) == 0 || matchesOthers(selector, key, podsWith.candidates(key.Namespace, selector)) {
			continue
		}
		if key.Kind == "StatefulSet" && !ordinalNames(key.Name, pods) {
			continue
		}
		derived = append(derived, listItem{Index: -1, Kind: key.Kind, Namespace: key.Namespace, Name: key.Name, Object: ownerObject(key, pods, selector),
			DerivedFrom: fmt.Sprintf("its %d pod(s) (pod %s's spec is its template)", len(pods), qualifiedName(pods[0].Namespace, pods[0].Name))})
	}
	return derived
}

// derivable are the kinds of controller deriveOwners makes.
var derivable = map[string]bool{"ReplicaSet": true, "StatefulSet": true, "DaemonSet": true, "Job": true}

// jobRestartPolicy is the restart policy of a derived Job's template: OnFailure when every pod
// has it, else Never.
func jobRestartPolicy(pods []*corev1.Pod) corev1.RestartPolicy {
	for _, pod := range pods {
		if pod.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
			return corev1.RestartPolicyNever
		}
	}
	return corev1.RestartPolicyOnFailure
}

// sharedLabels are the labels (key and value) every pod carries.
func sharedLabels(pods []*corev1.Pod) map[string]string {
	shared := map[string]string{}
	for k, v := range pods[0].Labels {
		shared[k] = v
	}
	for _, pod := range pods[1:] {
		for k, v := range shared {
			if pod.Labels[k] != v {
				delete(shared, k)
			}
		}
	}
	return shared
}

// labelIndex holds the pods by namespace, label key and value, so that the pods a selector could
// match are found without looking at every pod of the namespace (a 10,000-node List has thousands
// of owners in namespaces of tens of thousands of pods).
type labelIndex map[[3]string][]*corev1.Pod

func (x labelIndex) add(pod *corev1.Pod) {
	for k, v := range pod.Labels {
		key := [3]string{pod.Namespace, k, v}
		x[key] = append(x[key], pod)
	}
}

// candidates are the pods of the namespace with the selector's rarest label: every pod the
// selector matches is among them.
func (x labelIndex) candidates(namespace string, selector map[string]string) []*corev1.Pod {
	var fewest []*corev1.Pod
	first := true
	for k, v := range selector {
		if pods := x[[3]string{namespace, k, v}]; first || len(pods) < len(fewest) {
			fewest, first = pods, false
		}
	}
	return fewest
}

// matchesOthers says whether a pod not owned by key matches the selector.
func matchesOthers(selector map[string]string, key ownerKey, pods []*corev1.Pod) bool {
	s := labels.SelectorFromSet(selector)
	for _, pod := range pods {
		if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == key.Kind && ref.Name == key.Name {
			continue
		}
		if s.Matches(labels.Set(pod.Labels)) {
			return true
		}
	}
	return false
}

// ordinalNames says whether the pods are exactly <name>-0 ... <name>-(n-1).
func ordinalNames(name string, pods []*corev1.Pod) bool {
	seen := make([]bool, len(pods))
	for _, pod := range pods {
		suffix, ok := strings.CutPrefix(pod.Name, name+"-")
		n, err := strconv.Atoi(suffix)
		if !ok || err != nil || n < 0 || n >= len(pods) || seen[n] || strconv.Itoa(n) != suffix {
			return false
		}
		seen[n] = true
	}
	return true
}

// ownerObject builds the derived owner: its template is its first pod's spec made a template
// (unbound, ungated, no priority value or deadline; restartPolicy Always, a Job's jobRestartPolicy).
func ownerObject(key ownerKey, pods []*corev1.Pod, selector map[string]string) runtime.Object {
	spec := *pods[0].Spec.DeepCopy()
	spec.NodeName = ""
	spec.SchedulingGates = nil
	spec.Priority = nil
	spec.PreemptionPolicy = nil
	spec.ActiveDeadlineSeconds = nil
	spec.EphemeralContainers = nil
	spec.RestartPolicy = corev1.RestartPolicyAlways
	if key.Kind == "Job" {
		spec.RestartPolicy = jobRestartPolicy(pods)
	}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: selector}, Spec: spec}
	meta := metav1.ObjectMeta{
		Name:        key.Name,
		Namespace:   key.Namespace,
		Annotations: map[string]string{annotationDerived: fmt.Sprintf("controller of %d pod(s) in the List, which lacks it", len(pods))},
	}
	labelSelector := &metav1.LabelSelector{MatchLabels: selector}
	replicas := ptr.To(int32(len(pods)))
	switch key.Kind {
	case "ReplicaSet":
		return &appsv1.ReplicaSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: key.Kind}, ObjectMeta: meta,
			Spec: appsv1.ReplicaSetSpec{Replicas: replicas, Selector: labelSelector, Template: template}}
	case "StatefulSet":
		return &appsv1.StatefulSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: key.Kind}, ObjectMeta: meta,
			Spec: appsv1.StatefulSetSpec{Replicas: replicas, Selector: labelSelector, Template: template,
				PodManagementPolicy: appsv1.ParallelPodManagement, UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}}}
	case "Job":
		running := int32(0)
		for _, pod := range pods {
			if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
				running++
			}
		}
		return &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: key.Kind}, ObjectMeta: meta,
			Spec: batchv1.JobSpec{Parallelism: ptr.To(running), Selector: labelSelector, ManualSelector: ptr.To(true), Template: template}}
	default:
		return &appsv1.DaemonSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: key.Kind}, ObjectMeta: meta,
			Spec: appsv1.DaemonSetSpec{Selector: labelSelector, Template: template}}
	}
}
