package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/types"
)

const sampleList = `{"apiVersion":"v1","kind":"List","items":[
 {"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"team","uid":"u-pod","resourceVersion":"7",
  "creationTimestamp":"2026-01-01T00:00:00Z","ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"u-rs","controller":true},
  {"apiVersion":"apps/v1","kind":"DaemonSet","name":"gone","uid":"u-ds"}]},
  "spec":{"nodeName":"n1","priorityClassName":"high","priority":1000,"preemptionPolicy":"Never","containers":[{"name":"c","image":"i"}]},
  "status":{"phase":"Running","podIP":"1.2.3.4"}},
 {"apiVersion":"v1","kind":"Pod","metadata":{"name":"waiting","namespace":"team"},"spec":{"priorityClassName":"high","priority":1000,"containers":[{"name":"c","image":"i"}]}},
 {"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"web","namespace":"team","uid":"u-rs","ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"web","uid":"u-dep","controller":true}]},
  "spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}},
 {"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"team","uid":"u-dep"},
  "spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}},
 {"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"PodGroup","metadata":{"name":"g","namespace":"team"}},
 {"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","uid":"u-n1"},"status":{"allocatable":{"cpu":"8","nvidia.com/gpu":"4"},"capacity":{"cpu":"8","nvidia.com/gpu":"4"},
  "conditions":[{"type":"Ready","status":"False"}]}}
]}`

func decodeSample(t *testing.T) []listItem {
	t.Helper()
	items, err := decodeList([]byte(sampleList), "sample")
	if err != nil {
		t.Fatal(err)
	}
	return items
}

func TestDecodeListKeepsUnservedKindsForCounting(t *testing.T) {
	items := decodeSample(t)
	if len(items) != 6 {
		t.Fatalf("%d items", len(items))
	}
	if items[4].Kind != "PodGroup" || items[4].Object != nil {
		t.Fatalf("PodGroup decoded as %T, want nil (not served)", items[4].Object)
	}
	if _, ok := items[0].Object.(*corev1.Pod); !ok || items[0].Namespace != "team" || items[0].Name != "web-1" {
		t.Fatalf("first item %+v", items[0])
	}
}

func TestDecodeListRefusesWhatIsNotAList(t *testing.T) {
	for _, doc := range []string{`{"kind":"Pod"}`, `[1,2]`, `{"kind":"List","items":[{"metadata":{"name":"x"}}]}`,
		`{"kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":"no"}}]}`} {
		if _, err := decodeList([]byte(doc), "doc"); err == nil {
			t.Errorf("%s accepted", doc)
		} else if _, ok := err.(*badListError); !ok {
			t.Errorf("%s: %T, want *badListError", doc, err)
		}
	}
}

func TestPreparePodStripsServerFieldsAndRewritesOwners(t *testing.T) {
	items := decodeSample(t)
	pod := items[0].Object.DeepCopyObject().(*corev1.Pod)
	var stats prepareStats
	prepareObject(pod, map[ownerKey]types.UID{{"ReplicaSet", "team", "web"}: "new-rs"}, prepareOptions{GatePending: true, Now: time.Now()}, &stats)
	if pod.UID != "" || pod.ResourceVersion != "" || !pod.CreationTimestamp.IsZero() {
		t.Fatalf("server fields kept: %+v", pod.ObjectMeta)
	}
	if pod.Annotations[annotationSourceUID] != "u-pod" {
		t.Fatalf("source uid annotation %q", pod.Annotations[annotationSourceUID])
	}
	if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].UID != "new-rs" {
		t.Fatalf("owner references %+v, want the ReplicaSet's new uid only", pod.OwnerReferences)
	}
	var dropped []map[string]interface{}
	if err := json.Unmarshal([]byte(pod.Annotations[annotationSourceOwners]), &dropped); err != nil || len(dropped) != 1 || dropped[0]["name"] != "gone" {
		t.Fatalf("dropped owners annotation %q (%v)", pod.Annotations[annotationSourceOwners], err)
	}
	if stats.OwnerReferencesDropped != 1 || stats.GatedPendingPods != 0 {
		t.Fatalf("stats %+v", stats)
	}
	if pod.Spec.NodeName != "n1" || pod.Spec.Priority != nil || pod.Spec.PreemptionPolicy != nil || pod.Status.Phase != "" {
		t.Fatalf("pod spec/status not prepared: node %q priority %v policy %v phase %q", pod.Spec.NodeName, pod.Spec.Priority, pod.Spec.PreemptionPolicy, pod.Status.Phase)
	}
}

func TestPreparePendingPodGated(t *testing.T) {
	items := decodeSample(t)
	for _, gate := range []bool{true, false} {
		pod := items[1].Object.DeepCopyObject().(*corev1.Pod)
		var stats prepareStats
		prepareObject(pod, nil, prepareOptions{GatePending: gate}, &stats)
		gated := len(pod.Spec.SchedulingGates) == 1 && pod.Spec.SchedulingGates[0].Name == schedulingGateHold
		if gated != gate || stats.GatedPendingPods != map[bool]int{true: 1, false: 0}[gate] {
			t.Fatalf("gate=%v: gates %+v stats %+v", gate, pod.Spec.SchedulingGates, stats)
		}
	}
}

func TestPrepareNodeKeepsCapacityAndBecomesReady(t *testing.T) {
	items := decodeSample(t)
	node := items[5].Object.DeepCopyObject().(*corev1.Node)
	prepareObject(node, nil, prepareOptions{Now: time.Now()}, &prepareStats{})
	if !nodeReady(node) {
		t.Fatalf("node conditions %+v, want Ready", node.Status.Conditions)
	}
	gpus := node.Status.Allocatable["nvidia.com/gpu"]
	if gpus.Value() != 4 {
		t.Fatalf("allocatable %v", node.Status.Allocatable)
	}
}

func TestOwnershipLevelsPutOwnersFirst(t *testing.T) {
	items := decodeSample(t)
	levels := ownershipLevels([]listItem{items[2], items[3]})
	if len(levels) != 2 || levels[0][0].Kind != "Deployment" || levels[1][0].Kind != "ReplicaSet" {
		t.Fatalf("levels %+v", levels)
	}
}

func TestDeriveNamespacesAndPriorityClasses(t *testing.T) {
	derived, _, err := deriveObjects(decodeSample(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range derived {
		got = append(got, d.Kind+"/"+d.Name)
	}
	if strings.Join(got, ",") != "Namespace/team,PriorityClass/high" {
		t.Fatalf("derived %v", got)
	}
}

func TestDeriveRefusesTwoPrioritiesForOneClass(t *testing.T) {
	doc := strings.Replace(sampleList, `"name":"waiting","namespace":"team"},"spec":{"priorityClassName":"high","priority":1000`, `"name":"waiting","namespace":"team"},"spec":{"priorityClassName":"high","priority":5`, 1)
	items, err := decodeList([]byte(doc), "doc")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := deriveObjects(items); err == nil || !strings.Contains(err.Error(), "team/waiting") {
		t.Fatalf("err %v, want one naming team/waiting", err)
	}
}

func TestPriorityWithoutClassGetsTheClassOfItsValue(t *testing.T) {
	doc := `{"kind":"List","items":[
	 {"apiVersion":"v1","kind":"Pod","metadata":{"name":"proxy","namespace":"kube-system"},"spec":{"priority":2000001000,"containers":[{"name":"c","image":"i"}]}},
	 {"apiVersion":"v1","kind":"Pod","metadata":{"name":"odd","namespace":"ns"},"spec":{"priority":7,"containers":[{"name":"c","image":"i"}]}}]}`
	items, err := decodeList([]byte(doc), "doc")
	if err != nil {
		t.Fatal(err)
	}
	derived, classes, err := deriveObjects(items)
	if err != nil {
		t.Fatal(err)
	}
	if classes[2000001000] != "system-node-critical" || classes[7] != "planner-priority-7" {
		t.Fatalf("classes %v", classes)
	}
	var names []string
	for _, d := range derived {
		names = append(names, d.Kind+"/"+d.Name)
	}
	if strings.Join(names, ",") != "Namespace/ns,PriorityClass/planner-priority-7" {
		t.Fatalf("derived %v", names)
	}
	pod := items[0].Object.DeepCopyObject().(*corev1.Pod)
	prepareObject(pod, nil, prepareOptions{ClassForPriority: classes}, &prepareStats{})
	if pod.Spec.PriorityClassName != "system-node-critical" || pod.Spec.Priority != nil || pod.Annotations[annotationPriority] != "2000001000" {
		t.Fatalf("pod spec %+v annotations %v", pod.Spec, pod.Annotations)
	}
}

func TestRuntimeClassesDerivedWithThePodsOverhead(t *testing.T) {
	pod := func(name, cpu string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"ns"},"spec":{"runtimeClassName":"kata","overhead":{"cpu":"` + cpu + `"},"containers":[{"name":"c","image":"i"}]}}`
	}
	items, err := decodeList([]byte(`{"kind":"List","items":[`+pod("a", "250m")+`,`+pod("b", "250m")+`]}`), "doc")
	if err != nil {
		t.Fatal(err)
	}
	derived, err := deriveRuntimeClasses(items)
	if err != nil || len(derived) != 1 {
		t.Fatalf("derived %v err %v", derived, err)
	}
	rc := derived[0].Object.(*nodev1.RuntimeClass)
	if rc.Name != "kata" || rc.Handler != "kata" || rc.Overhead.PodFixed.Cpu().MilliValue() != 250 {
		t.Fatalf("runtime class %+v", rc)
	}
	items, err = decodeList([]byte(`{"kind":"List","items":[`+pod("a", "250m")+`,`+pod("b", "1")+`]}`), "doc")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := deriveRuntimeClasses(items); err == nil || !strings.Contains(err.Error(), "ns/b") {
		t.Fatalf("two overheads: err %v", err)
	}
}
