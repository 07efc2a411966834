package main

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// podRunner writes the status a kubelet reports for a pod it started (Running and Ready) or that
// ended as the List recorded. The loader runs each bound pod with it right after creating it (one
// status write per pod, no watch round trip, before any controller looks); the pod simulator runs
// the pods bound later (by the scheduler during a replay). Both share its address allocator.
type podRunner struct {
	client kubernetes.Interface

	mu     sync.Mutex
	nextIP uint32
	ips    map[types.UID]string
}

func newPodRunner(client kubernetes.Interface) *podRunner {
	return &podRunner{client: client, ips: map[types.UID]string{}}
}

// run writes pod's status as its node's kubelet reports it once the containers started (or, for a
// pod the List recorded as Succeeded or Failed, ended); it returns the server's copy.
func (r *podRunner) run(ctx context.Context, pod *corev1.Pod, node *corev1.Node) (*corev1.Pod, error) {
	updated := pod.DeepCopy()
	if end := recordedEnd(pod); end != "" {
		setFinishedPodStatus(updated, nodeAddress(node), end, time.Now())
	} else {
		setRunningPodStatus(updated, nodeAddress(node), r.podIP(pod), time.Now())
	}
	return r.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
}

// podIP gives each pod a distinct address in 10.0.0.0/8 (host-network pods use the node's).
func (r *podRunner) podIP(pod *corev1.Pod) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ip, ok := r.ips[pod.UID]; ok {
		return ip
	}
	r.nextIP++
	n := r.nextIP % (1 << 24)
	ip := net.IPv4(10, byte(n>>16), byte(n>>8), byte(n)).String()
	r.ips[pod.UID] = ip
	return ip
}

// forget frees the address of a pod removed for good.
func (r *podRunner) forget(uid types.UID) {
	r.mu.Lock()
	delete(r.ips, uid)
	r.mu.Unlock()
}

// nodeAddress is the node's InternalIP, else its first address, else 127.0.0.1.
func nodeAddress(node *corev1.Node) string {
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && net.ParseIP(a.Address) != nil {
			return a.Address
		}
	}
	for _, a := range node.Status.Addresses {
		if net.ParseIP(a.Address) != nil {
			return a.Address
		}
	}
	return loopbackHost
}

// setRunningPodStatus sets the status a kubelet reports for a started pod whose containers all
// run and are ready: init containers completed (restartable ones, sidecars, running), every
// condition True, a pod IP and host IP. The QoS class, set by the API server, is kept.
func setRunningPodStatus(pod *corev1.Pod, hostIP, podIP string, now time.Time) {
	stamp := metav1.NewTime(now)
	if pod.Spec.HostNetwork {
		podIP = hostIP
	}
	status := &pod.Status
	status.Phase = corev1.PodRunning
	status.HostIP = hostIP
	status.HostIPs = []corev1.HostIP{{IP: hostIP}}
	status.PodIP = podIP
	status.PodIPs = []corev1.PodIP{{IP: podIP}}
	if status.StartTime == nil {
		status.StartTime = &stamp
	}
	status.Reason, status.Message = "", ""
	conditions := []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady, corev1.PodScheduled}
	var kept []corev1.PodCondition
	for _, c := range status.Conditions {
		if !containsCondition(conditions, c.Type) {
			kept = append(kept, c)
		}
	}
	for _, t := range conditions {
		kept = append(kept, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: stamp})
	}
	status.Conditions = kept
	status.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		cs := containerStatus(pod, c, stamp)
		if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			cs.Ready, cs.Started = true, ptr.To(false)
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: stamp, FinishedAt: stamp, ContainerID: cs.ContainerID}}
		}
		status.InitContainerStatuses = append(status.InitContainerStatuses, cs)
	}
	status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		status.ContainerStatuses = append(status.ContainerStatuses, containerStatus(pod, c, stamp))
	}
}

// setFinishedPodStatus sets the status of a pod whose containers all ended (exit 0 when it
// Succeeded, 1 when it Failed): not Ready, no pod IP.
func setFinishedPodStatus(pod *corev1.Pod, hostIP string, phase corev1.PodPhase, now time.Time) {
	stamp := metav1.NewTime(now)
	exitCode, reason := int32(0), "Completed"
	if phase == corev1.PodFailed {
		exitCode, reason = 1, "Error"
	}
	status := &pod.Status
	status.Phase = phase
	status.HostIP = hostIP
	status.HostIPs = []corev1.HostIP{{IP: hostIP}}
	if status.StartTime == nil {
		status.StartTime = &stamp
	}
	status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: stamp},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: stamp},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: stamp},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: stamp},
	}
	status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		cs := containerStatus(pod, c, stamp)
		cs.Ready, cs.Started = false, ptr.To(false)
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exitCode, Reason: reason, StartedAt: stamp, FinishedAt: stamp, ContainerID: cs.ContainerID}}
		status.ContainerStatuses = append(status.ContainerStatuses, cs)
	}
	status.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		cs := containerStatus(pod, c, stamp)
		cs.Ready, cs.Started = false, ptr.To(false)
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: stamp, FinishedAt: stamp, ContainerID: cs.ContainerID}}
		status.InitContainerStatuses = append(status.InitContainerStatuses, cs)
	}
}

func containsCondition(types []corev1.PodConditionType, t corev1.PodConditionType) bool {
	for _, x := range types {
		if x == t {
			return true
		}
	}
	return false
}

// containerStatus is a running, ready, started container that never restarted.
func containerStatus(pod *corev1.Pod, c corev1.Container, started metav1.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name:        c.Name,
		Image:       c.Image,
		ImageID:     c.Image,
		ContainerID: fmt.Sprintf("simulated://%s/%s", pod.UID, c.Name),
		Ready:       true,
		Started:     ptr.To(true),
		State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
	}
}
