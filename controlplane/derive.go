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
	builtinPriorityClasses = map[string]int32{"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
)

// deriveObjects returns the objects the List's own items need but lack, as kubectl snapshots of
// nodes, pods and budgets usually do: the Namespaces its objects live in, and the PriorityClasses
// its pods name, each with the priority value the pods carry (admission would otherwise refuse
// every such pod). Pods that name one class with two values make the List unusable: an error
// names both pods. A pod that gives a priority without naming a class (admission would refuse it
// too) is given the class of that value (classForPriority): one the List or the API server has, or
// one derived, named planner-priority-<value>.
func deriveObjects(items []listItem) (derived []listItem, classForPriority map[int32]string, err error) {
	namespaces := map[string]bool{}
	classes := map[string]bool{}
	byValue := map[int32]string{}
	for name, value := range builtinPriorityClasses {
		byValue[value] = name
	}
	for _, item := range items {
		switch item.Kind {
		case "Namespace":
			namespaces[item.Name] = true
		case "PriorityClass":
			classes[item.Name] = true
			if pc, ok := item.Object.(*schedulingv1.PriorityClass); ok {
				if known, taken := byValue[pc.Value]; !taken || pc.Name < known {
					byValue[pc.Value] = pc.Name
				}
			}
		}
	}
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
		if _, builtin := builtinPriorityClasses[name]; classes[name] || builtin {
			continue
		}
		where := qualifiedName(pod.Namespace, pod.Name)
		if seen, ok := values[name]; ok {
			if seen.value != *pod.Spec.Priority {
				return nil, nil, &badListError{fmt.Sprintf("pods name PriorityClass %q with two priorities: %d (pod %s) and %d (pod %s); the List has no PriorityClass %q to say which", name, seen.value, seen.pod, *pod.Spec.Priority, where, name)}
			}
			continue
		}
		values[name] = seenValue{*pod.Spec.Priority, where}
		classNames = append(classNames, name)
		if known, taken := byValue[*pod.Spec.Priority]; !taken || name < known {
			byValue[*pod.Spec.Priority] = name
		}
	}
	classForPriority = map[int32]string{}
	for _, item := range items {
		pod, ok := item.Object.(*corev1.Pod)
		if !ok || pod.Spec.PriorityClassName != "" || pod.Spec.Priority == nil || *pod.Spec.Priority == 0 {
			continue
		}
		value := *pod.Spec.Priority
		if _, done := classForPriority[value]; done {
			continue
		}
		name, known := byValue[value]
		if !known {
			name = fmt.Sprintf("planner-priority-%d", value)
			byValue[value] = name
			values[name] = seenValue{value, qualifiedName(pod.Namespace, pod.Name)}
			classNames = append(classNames, name)
		}
		classForPriority[value] = name
	}
	sort.Strings(classNames)
	for _, name := range classNames {
		derived = append(derived, listItem{Index: -1, APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass", Name: name,
			Object: &schedulingv1.PriorityClass{TypeMeta: metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass"}, ObjectMeta: metav1.ObjectMeta{Name: name}, Value: values[name].value}})
	}
	return derived, classForPriority, nil
}
