package main

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestRunningPodStatusIsWhatAKubeletReports(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u"},
		Spec: corev1.PodSpec{NodeName: "n1",
			InitContainers: []corev1.Container{{Name: "setup", Image: "i"}, {Name: "sidecar", Image: "s", RestartPolicy: &always}},
			Containers:     []corev1.Container{{Name: "main", Image: "m"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable},
	}
	if !podNeedsWork(pod) {
		t.Fatal("pending bound pod needs no work")
	}
	setRunningPodStatus(pod, "192.0.2.1", "10.0.0.5", time.Now())
	if !podRunningReady(pod) || podNeedsWork(pod) {
		t.Fatalf("status %+v not Running and Ready", pod.Status)
	}
	if pod.Status.PodIP != "10.0.0.5" || pod.Status.HostIP != "192.0.2.1" || pod.Status.QOSClass != corev1.PodQOSBurstable {
		t.Fatalf("ips %s/%s qos %s", pod.Status.PodIP, pod.Status.HostIP, pod.Status.QOSClass)
	}
	if len(pod.Status.ContainerStatuses) != 1 || pod.Status.ContainerStatuses[0].State.Running == nil || !pod.Status.ContainerStatuses[0].Ready {
		t.Fatalf("container statuses %+v", pod.Status.ContainerStatuses)
	}
	init := pod.Status.InitContainerStatuses
	if len(init) != 2 || init[0].State.Terminated == nil || init[0].State.Terminated.ExitCode != 0 || init[1].State.Running == nil {
		t.Fatalf("init statuses %+v: want setup completed, sidecar running", init)
	}
	pod.DeletionTimestamp = ptr.To(metav1.Now())
	if !podNeedsWork(pod) {
		t.Fatal("a pod being deleted needs its deletion finished")
	}
}

func TestHostNetworkPodUsesNodeAddress(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "c"}}}}
	setRunningPodStatus(pod, "192.0.2.9", "10.0.0.1", time.Now())
	if pod.Status.PodIP != "192.0.2.9" {
		t.Fatalf("host-network pod IP %s", pod.Status.PodIP)
	}
}

func TestUnboundPodIsLeftToTheScheduler(t *testing.T) {
	if podNeedsWork(&corev1.Pod{}) {
		t.Fatal("unbound pod would be run")
	}
}

func TestPodIPsDistinct(t *testing.T) {
	s := newPodRunner(nil)
	a := s.podIP(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "a"}})
	b := s.podIP(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "b"}})
	if a == b || s.podIP(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "a"}}) != a {
		t.Fatalf("ips %s %s", a, b)
	}
}

func TestFinishedPodEndsAsTheListRecorded(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "job-1", Annotations: map[string]string{annotationSourcePhase: "Failed"}},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "main", Image: "m"}}},
	}
	if !podNeedsWork(pod) {
		t.Fatal("a pod the List recorded as Failed needs ending")
	}
	setFinishedPodStatus(pod, "192.0.2.1", recordedEnd(pod), time.Now())
	if pod.Status.Phase != corev1.PodFailed || podNeedsWork(pod) || podRunningReady(pod) {
		t.Fatalf("status %+v", pod.Status)
	}
	if term := pod.Status.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 1 {
		t.Fatalf("container %+v", pod.Status.ContainerStatuses[0])
	}
}
