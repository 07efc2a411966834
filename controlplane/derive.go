package main

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// builtinNamespaces and builtinPriorityClasses exist on every API server from its start.
var (
	builtinNamespaces      = map[string]bool{"default": true, "kube-system": true, "kube-public": true, "kube-node-lease": true}
	builtinPriorityClasses = map[string]bool{"system-node-critical": true, "system-cluster-critical": true}
)

// deriveObjects returns the objects the List's own items need but lack, as kubectl snapshots of
// nodes, pods and budgets usually do: the Namespaces its objects live in, and the PriorityClasses
// its pods name, each with the priority value the pods carry (admission would otherwise refuse
// every such pod). Pods that name one class with two values make the List unusable: an error
// names both pods.
func deriveObjects(items []listItem) ([]listItem, error) {
	namespaces := map[string]bool{}
	classes := map[string]bool{}
	for _, item := range items {
		switch item.Kind {
		case "Namespace":
			namespaces[item.Name] = true
		case "PriorityClass":
			classes[item.Name] = true
		}
	}
	var derived []listItem
	var namespaceNames []string
	wanted := map[string]bool{}
	for _, item := range items {
		if item.Object != nil && item.Namespace != "" && !namespaces[item.Namespace] && !builtinNamespaces[item.Namespace] && !wanted[item.Namespace] {
			wanted[item.Namespace] = true
			namespaceNames = append(namespaceNames, item.Namespace)
		}
	}
	sort.Strings(namespaceNames)
	for _, name := range namespaceNames {
		derived = append(derived, listItem{Index: -1, APIVersion: "v1", Kind: "Namespace", Name: name,
			Object: &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: name}}})
	}
	type seenValue struct {
		value int32
		pod   string
	}
	values := map[string]seenValue{}
	var classNames []string
	for _, item := range items {
		pod, ok := item.Object.(*corev1.Pod)
		if !ok || pod.Spec.PriorityClassName == "" || pod.Spec.Priority == nil {
			continue
		}
		name := pod.Spec.PriorityClassName
		if classes[name] || builtinPriorityClasses[name] {
			continue
		}
		where := qualifiedName(pod.Namespace, pod.Name)
		if seen, ok := values[name]; ok {
			if seen.value != *pod.Spec.Priority {
				return nil, &badListError{fmt.Sprintf("pods name PriorityClass %q with two priorities: %d (pod %s) and %d (pod %s); the List has no PriorityClass %q to say which", name, seen.value, seen.pod, *pod.Spec.Priority, where, name)}
			}
			continue
		}
		values[name] = seenValue{*pod.Spec.Priority, where}
		classNames = append(classNames, name)
	}
	sort.Strings(classNames)
	for _, name := range classNames {
		derived = append(derived, listItem{Index: -1, APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass", Name: name,
			Object: &schedulingv1.PriorityClass{TypeMeta: metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass"}, ObjectMeta: metav1.ObjectMeta{Name: name}, Value: values[name].value}})
	}
	return derived, nil
}
