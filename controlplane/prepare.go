package main

import (
	"encoding/json"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Annotations and the scheduling gate the loader adds, so nothing it changes is lost.
const (
	annotationSourceUID    = "planner.io/source-uid"
	annotationSourceOwners = "planner.io/source-owner-references"
	annotationSourcePhase  = "planner.io/source-phase"
	annotationPriority     = "planner.io/source-priority"
	schedulingGateHold     = "planner.io/hold"
)

// ownerKey names a loaded owner: its kind, namespace and name.
type ownerKey struct{ Kind, Namespace, Name string }

// prepareOptions say how pods are prepared.
type prepareOptions struct {
	GatePending      bool             // pending pods get the planner.io/hold scheduling gate
	Now              time.Time        // stamp of the nodes' Ready conditions
	ClassForPriority map[int32]string // the PriorityClass for a pod that gives a priority but no class
}

// prepareStats counts what preparation changed beyond server-set fields.
type prepareStats struct {
	OwnerReferencesDropped int
	GatedPendingPods       int
}

// stripServerFields clears what the API server sets on create (uid, resourceVersion, timestamps,
// generation, managed fields, deletion marks) and keeps the source uid in an annotation so plans
// that name objects by uid can be mapped to the loaded ones.
func stripServerFields(m *metav1.ObjectMeta) {
	if m.UID != "" {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[annotationSourceUID] = string(m.UID)
	}
	m.UID = ""
	m.ResourceVersion = ""
	m.CreationTimestamp = metav1.Time{}
	m.Generation = 0
	m.ManagedFields = nil
	m.SelfLink = ""
	m.DeletionTimestamp = nil
	m.DeletionGracePeriodSeconds = nil
}

// rewriteOwners points owner references at the loaded owners' new uids; references to owners not
// in the List are dropped (kept verbatim in an annotation): the garbage collector would otherwise
// delete the object as an orphan of a missing owner. It returns how many were dropped.
func rewriteOwners(m *metav1.ObjectMeta, loaded map[ownerKey]types.UID) int {
	if len(m.OwnerReferences) == 0 {
		return 0
	}
	var kept, dropped []metav1.OwnerReference
	for _, ref := range m.OwnerReferences {
		uid, ok := loaded[ownerKey{ref.Kind, m.Namespace, ref.Name}]
		if !ok { // a cluster-scoped owner (a mirror pod's Node)
			uid, ok = loaded[ownerKey{ref.Kind, "", ref.Name}]
		}
		if ok {
			ref.UID = uid
			kept = append(kept, ref)
		} else {
			dropped = append(dropped, ref)
		}
	}
	if len(dropped) > 0 {
		data, _ := json.Marshal(dropped)
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[annotationSourceOwners] = string(data)
	}
	m.OwnerReferences = kept
	return len(dropped)
}

// prepareObject readies one decoded List object for create: server-set fields stripped, owners
// rewritten, status cleared except a node's capacity and addresses (the node simulator reports
// the rest), and pod fields admission derives from the PriorityClass left to admission.
func prepareObject(obj runtime.Object, loaded map[ownerKey]types.UID, opts prepareOptions, stats *prepareStats) {
	om := objectMeta(obj)
	if om != nil {
		stripServerFields(om)
		stats.OwnerReferencesDropped += rewriteOwners(om, loaded)
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		preparePod(o, opts, stats)
	case *corev1.Node:
		setReadyNodeStatus(o, opts.Now)
	case *corev1.Namespace:
		o.Status = corev1.NamespaceStatus{}
		o.Spec.Finalizers = nil
	case *policyv1.PodDisruptionBudget:
		o.Status = policyv1.PodDisruptionBudgetStatus{}
	case *appsv1.Deployment:
		o.Status = appsv1.DeploymentStatus{}
	case *appsv1.ReplicaSet:
		o.Status = appsv1.ReplicaSetStatus{}
	case *appsv1.StatefulSet:
		o.Status = appsv1.StatefulSetStatus{}
	case *appsv1.DaemonSet:
		o.Status = appsv1.DaemonSetStatus{}
	case *batchv1.Job:
		o.Status = batchv1.JobStatus{}
		// A List's Job carries the selector the server generated from its old uid; kept as a
		// manual selector, its pods (labelled with that uid) still match it.
		if o.Spec.Selector != nil {
			o.Spec.ManualSelector = ptr.To(true)
		}
	case *resourcev1.ResourceClaim:
		o.Status = resourcev1.ResourceClaimStatus{}
	}
}

// preparePod clears the pod's status and admission-derived priority fields, and gates a pending
// pod so the scheduler leaves it pending until a plan's replay releases it.
func preparePod(pod *corev1.Pod, opts prepareOptions, stats *prepareStats) {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		// A finished pod stays finished: the node simulator ends it as the List recorded.
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[annotationSourcePhase] = string(pod.Status.Phase)
	}
	pod.Status = corev1.PodStatus{}
	if p := pod.Spec.Priority; p != nil && *p != 0 && pod.Spec.PriorityClassName == "" && opts.ClassForPriority[*p] != "" {
		// Admission computes a pod's priority from its class and refuses a value it did not
		// compute: the pod names the class of its value instead (the annotation says so).
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[annotationPriority] = strconv.Itoa(int(*p))
		pod.Spec.PriorityClassName = opts.ClassForPriority[*p]
	}
	if pod.Spec.PriorityClassName != "" || (pod.Spec.Priority != nil && *pod.Spec.Priority == 0) {
		pod.Spec.Priority = nil
		pod.Spec.PreemptionPolicy = nil
	}
	if pod.Spec.NodeName == "" && opts.GatePending {
		for _, g := range pod.Spec.SchedulingGates {
			if g.Name == schedulingGateHold {
				return
			}
		}
		pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: schedulingGateHold})
		stats.GatedPendingPods++
	}
}

// objectMeta returns the object's ObjectMeta for in-place edits.
func objectMeta(obj runtime.Object) *metav1.ObjectMeta {
	if o, ok := obj.(metav1.ObjectMetaAccessor); ok {
		return o.GetObjectMeta().(*metav1.ObjectMeta)
	}
	return nil
}
