package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
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

// jobPodJSON is a pod of Job owner with the restart policy and phase given.
func jobPodJSON(name, owner, restart, phase string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"ns","labels":{"job-name":%q,"app":"train"},
	  "ownerReferences":[{"apiVersion":"batch/v1","kind":"Job","name":%q,"uid":"old","controller":true}]},
	  "spec":{"nodeName":"n","restartPolicy":%q,"containers":[{"name":"c","image":"i"}]},"status":{"phase":%q}}`, name, owner, owner, restart, phase)
}

func TestDeriveOwnersGivesAJobExactlyThePodsItHas(t *testing.T) {
	got := ownersOf(t,
		jobPodJSON("train-a", "train", "Never", "Running"),
		jobPodJSON("train-b", "train", "Never", "Pending"),
		jobPodJSON("train-c", "train", "Never", "Succeeded"),
		jobPodJSON("train-d", "train", "Never", "Failed"),
		jobPodJSON("retry-a", "retry", "OnFailure", "Running"),
		// restartPolicy Always (or none: the API server defaults it to Always), or two policies:
		// the template restarts Never, the only other policy a Job's template may have
		jobPodJSON("serve-a", "serve", "Always", "Running"),
		jobPodJSON("mixed-a", "mixed", "Never", "Running"),
		jobPodJSON("mixed-b", "mixed", "OnFailure", "Running"),
		// the pods share no label with which to select them: no Job
		strings.Replace(jobPodJSON("bare-a", "bare", "Never", "Running"), `"labels":{"job-name":"bare","app":"train"},`, "", 1),
	)
	if len(got) != 4 {
		t.Fatalf("derived %v, want the Jobs train, retry, serve and mixed", got)
	}
	job := got["Job/train"].Object.(*batchv1.Job)
	// Two pods have not ended: the controller wants two and has two; it counts no ended pod (they
	// carry no tracking finalizer), so no completion count would ever be reached.
	if *job.Spec.Parallelism != 2 || job.Spec.Completions != nil || !*job.Spec.ManualSelector {
		t.Fatalf("job spec %+v", job.Spec)
	}
	if fmt.Sprint(job.Spec.Selector.MatchLabels) != "map[app:train job-name:train]" || fmt.Sprint(job.Spec.Template.Labels) != fmt.Sprint(job.Spec.Selector.MatchLabels) {
		t.Fatalf("selector %v, template labels %v", job.Spec.Selector.MatchLabels, job.Spec.Template.Labels)
	}
	if job.Spec.Template.Spec.RestartPolicy != "Never" || job.Spec.Template.Spec.NodeName != "" || job.Annotations[annotationDerived] == "" {
		t.Fatalf("template %+v", job.Spec.Template.Spec)
	}
	if retry := got["Job/retry"].Object.(*batchv1.Job); retry.Spec.Template.Spec.RestartPolicy != "OnFailure" || *retry.Spec.Parallelism != 1 {
		t.Fatalf("retry job %+v", retry.Spec)
	}
	for _, name := range []string{"Job/serve", "Job/mixed"} {
		if job := got[name].Object.(*batchv1.Job); job.Spec.Template.Spec.RestartPolicy != "Never" {
			t.Fatalf("%s template restarts %s, want Never", name, job.Spec.Template.Spec.RestartPolicy)
		}
	}
}

func TestDeriveOwnersIsNotQuadraticInThePods(t *testing.T) {
	// 10,000 one-pod ReplicaSets in one namespace: looking at every pod of the namespace for each
	// owner is 10^8 selector matches (tens of seconds); the label index makes it milliseconds.
	pods := make([]string, 0, 10000)
	for i := 0; i < 10000; i++ {
		pods = append(pods, podJSON(fmt.Sprintf("web-%d", i), fmt.Sprintf(`"app":"web","rs":"r%d"`, i), "ReplicaSet", fmt.Sprintf("r%d", i)))
	}
	items, err := decodeList([]byte(`{"kind":"List","items":[`+strings.Join(pods, ",")+`]}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	derived := deriveOwners(items)
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("deriveOwners took %s for 10,000 pods", took)
	}
	if len(derived) != 10000 {
		t.Fatalf("derived %d owners, want 10,000", len(derived))
	}
}
