package main

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// deriveRuntimeClasses returns the RuntimeClasses the List's pods name but it lacks (the RuntimeClass
// admission plugin refuses a pod naming a class that does not exist): handler = the class name, and
// the pod overhead the pods carry (admission also refuses a pod whose overhead differs from its
// class's). Pods that name one class with two overheads make the List unusable: an error names both.
func deriveRuntimeClasses(items []listItem) ([]listItem, error) {
	present := map[string]bool{}
	for _, item := range items {
		if item.Kind == "RuntimeClass" {
			present[item.Name] = true
		}
	}
	type seen struct {
		overhead corev1.ResourceList
		pod      string
	}
	classes := map[string]seen{}
	var names []string
	for _, item := range items {
		pod, ok := item.Object.(*corev1.Pod)
		if !ok || pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName == "" || present[*pod.Spec.RuntimeClassName] {
			continue
		}
		name := *pod.Spec.RuntimeClassName
		where := qualifiedName(pod.Namespace, pod.Name)
		if s, ok := classes[name]; ok {
			if !apiequality.Semantic.DeepEqual(s.overhead, pod.Spec.Overhead) {
				return nil, &badListError{fmt.Sprintf("pods name RuntimeClass %q with two overheads: %v (pod %s) and %v (pod %s); the List has no RuntimeClass %q to say which", name, s.overhead, s.pod, pod.Spec.Overhead, where, name)}
			}
			continue
		}
		classes[name] = seen{pod.Spec.Overhead, where}
		names = append(names, name)
	}
	sort.Strings(names)
	var derived []listItem
	for _, name := range names {
		rc := &nodev1.RuntimeClass{TypeMeta: metav1.TypeMeta{APIVersion: "node.k8s.io/v1", Kind: "RuntimeClass"}, ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: name}
		if len(classes[name].overhead) > 0 {
			rc.Overhead = &nodev1.Overhead{PodFixed: classes[name].overhead}
		}
		derived = append(derived, listItem{Index: -1, APIVersion: "node.k8s.io/v1", Kind: "RuntimeClass", Name: name, Object: rc})
	}
	return derived, nil
}
