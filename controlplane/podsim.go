package main

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// everything selects every object of a lister.
var everything = labels.Everything()

// podSimulator runs the pods bound to simulated nodes the way a kubelet reports them: Running and
// Ready with a pod IP, conditions and container statuses; and it finishes a pod's graceful
// deletion (the kubelet's final delete with grace period 0) once the deletion is requested.
type podSimulator struct {
	client  kubernetes.Interface
	pods    corelisters.PodLister
	nodes   corelisters.NodeLister
	queue   workqueue.TypedRateLimitingInterface[string]
	workers int

	mu     sync.Mutex
	nextIP uint32
	ips    map[types.UID]string
}

func newPodSimulator(client kubernetes.Interface, factory informers.SharedInformerFactory, workers int) *podSimulator {
	s := &podSimulator{
		client:  client,
		pods:    factory.Core().V1().Pods().Lister(),
		nodes:   factory.Core().V1().Nodes().Lister(),
		queue:   workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 10*time.Second)),
		workers: workers,
		ips:     map[types.UID]string{},
	}
	enqueue := func(obj interface{}) {
		if pod, ok := obj.(*corev1.Pod); ok && podNeedsWork(pod) {
			if key, err := cache.MetaNamespaceKeyFunc(pod); err == nil {
				s.queue.Add(key)
			}
		}
	}
	_, _ = factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
	})
	// A pod bound before its node existed is picked up when the node arrives.
	_, _ = factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			node, ok := obj.(*corev1.Node)
			if !ok {
				return
			}
			pods, err := s.pods.List(everything)
			if err != nil {
				return
			}
			for _, pod := range pods {
				if pod.Spec.NodeName == node.Name {
					enqueue(pod)
				}
			}
		},
	})
	return s
}

// run works the queue until ctx ends.
func (s *podSimulator) run(ctx context.Context) {
	defer s.queue.ShutDown()
	var wg sync.WaitGroup
	for i := 0; i < s.workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s.processNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
}

func (s *podSimulator) processNext(ctx context.Context) bool {
	key, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(key)
	if err := s.sync(ctx, key); err != nil {
		if ctx.Err() == nil {
			klog.V(2).InfoS("pod simulator: retrying", "pod", key, "err", err)
			s.queue.AddRateLimited(key)
		}
		return true
	}
	s.queue.Forget(key)
	return true
}

// podNeedsWork says whether a pod bound to a node is still to be run or to be removed.
func podNeedsWork(pod *corev1.Pod) bool {
	if pod.Spec.NodeName == "" {
		return false
	}
	if pod.DeletionTimestamp != nil {
		return true
	}
	if podTerminal(pod) {
		return false
	}
	return recordedEnd(pod) != "" || !podRunningReady(pod)
}

// recordedEnd is the terminal phase the List recorded for a finished pod, or "".
func recordedEnd(pod *corev1.Pod) corev1.PodPhase {
	switch phase := corev1.PodPhase(pod.Annotations[annotationSourcePhase]); phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return phase
	}
	return ""
}

func podTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// podRunningReady says whether the pod is Running with its Ready condition True.
func podRunningReady(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (s *podSimulator) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := s.pods.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if !podNeedsWork(pod) {
		return nil
	}
	node, err := s.nodes.Get(pod.Spec.NodeName)
	if apierrors.IsNotFound(err) {
		return nil // no kubelet for it: the pod stays as it is until the node exists
	} else if err != nil {
		return err
	}
	pods := s.client.CoreV1().Pods(namespace)
	if pod.DeletionTimestamp != nil {
		// The containers have stopped: the kubelet removes the pod for good.
		err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			err = nil
		}
		if err == nil {
			s.mu.Lock()
			delete(s.ips, pod.UID)
			s.mu.Unlock()
		}
		return err
	}
	updated := pod.DeepCopy()
	if end := recordedEnd(pod); end != "" {
		setFinishedPodStatus(updated, nodeAddress(node), end, time.Now())
	} else {
		setRunningPodStatus(updated, nodeAddress(node), s.podIP(pod), time.Now())
	}
	_, err = pods.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err // a conflict is retried from the cache's newer copy
}

// podIP gives each pod a distinct address in 10.0.0.0/8 (host-network pods use the node's).
func (s *podSimulator) podIP(pod *corev1.Pod) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ip, ok := s.ips[pod.UID]; ok {
		return ip
	}
	s.nextIP++
	n := s.nextIP % (1 << 24)
	ip := net.IPv4(10, byte(n>>16), byte(n>>8), byte(n)).String()
	s.ips[pod.UID] = ip
	return ip
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
