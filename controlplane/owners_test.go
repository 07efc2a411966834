package main

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

func podJSON(name, labels, ownerKind, ownerName string) string {
	owner := ""
	if ownerKind != "" {
		owner = fmt.Sprintf(`,"ownerReferences":[{"apiVersion":"apps/v1","kind":%q,"name":%q,"uid":"x","controller":true}]`, ownerKind, ownerName)
	}
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"ns","labels":{%s}%s},
	  "spec":{"nodeName":"n","restartPolicy":"Never","activeDeadlineSeconds":5,"containers":[{"name":"c","image":"i"}]}}`, name, labels, owner)
}

func ownersOf(t *testing.T, pods ...string) map[string]listItem {
	t.Helper()
	items, err := decodeList([]byte(`{"kind":"List","items":[`+strings.Join(pods, ",")+`]}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]listItem{}
	for _, item := range deriveOwners(items) {
		got[item.Kind+"/"+item.Name] = item
	}
	return got
}

func TestDeriveOwnersGivesTheDisruptionControllerItsScale(t *testing.T) {
	got := ownersOf(t,
		podJSON("db-0", `"app":"db","idx":"0"`, "StatefulSet", "db"),
		podJSON("db-1", `"app":"db","idx":"1"`, "StatefulSet", "db"),
		podJSON("web-a", `"app":"web","pod-template-hash":"h"`, "ReplicaSet", "web-h"),
		podJSON("web-b", `"app":"web","pod-template-hash":"h"`, "ReplicaSet", "web-h"),
		podJSON("agent-1", `"app":"agent"`, "DaemonSet", "agent"),
	)
	if len(got) != 3 {
		t.Fatalf("derived %v", got)
	}
	sts := got["StatefulSet/db"].Object.(*appsv1.StatefulSet)
	if *sts.Spec.Replicas != 2 || sts.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType || fmt.Sprint(sts.Spec.Selector.MatchLabels) != "map[app:db]" {
		t.Fatalf("statefulset %+v", sts.Spec)
	}
	rs := got["ReplicaSet/web-h"].Object.(*appsv1.ReplicaSet)
	if *rs.Spec.Replicas != 2 || len(rs.Spec.Selector.MatchLabels) != 2 || rs.Spec.Template.Spec.NodeName != "" ||
		rs.Spec.Template.Spec.RestartPolicy != "Always" || rs.Spec.Template.Spec.ActiveDeadlineSeconds != nil {
		t.Fatalf("replicaset %+v", rs.Spec)
	}
	if rs.Annotations[annotationDerived] == "" {
		t.Fatal("derived owner not marked")
	}
	if _, ok := got["DaemonSet/agent"].Object.(*appsv1.DaemonSet); !ok {
		t.Fatal("daemonset not derived")
	}
}

func TestDeriveOwnersLeavesWhatAControllerWouldChange(t *testing.T) {
	got := ownersOf(t,
		// another pod matches the selector: the ReplicaSet would adopt it and delete one
		podJSON("web-a", `"app":"web"`, "ReplicaSet", "web"),
		podJSON("stray", `"app":"web"`, "", ""),
		// not <name>-0..n-1: the StatefulSet controller would create db-0 and db-1
		podJSON("db-x", `"app":"db"`, "StatefulSet", "db"),
		podJSON("db-2", `"app":"db"`, "StatefulSet", "db"),
		// no shared label: no selector
		podJSON("solo-a", `"a":"1"`, "ReplicaSet", "solo"),
		podJSON("solo-b", `"b":"1"`, "ReplicaSet", "solo"),
	)
	if len(got) != 0 {
		t.Fatalf("derived %v, want none", got)
	}
}
