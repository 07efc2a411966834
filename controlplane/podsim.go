package main

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// everything selects every object of a lister.
var everything = labels.Everything()

// podsByNode indexes pods by spec.nodeName.
const podsByNode = "planner.io/by-node"

// podSimulator runs the pods bound to simulated nodes the way a kubelet reports them: Running and
// Ready with a pod IP, conditions and container statuses (through its podRunner); and it finishes
// a pod's graceful deletion (the kubelet's final delete with grace period 0) once the deletion is
// requested.
type podSimulator struct {
	runner  *podRunner
	pods    corelisters.PodLister
	nodes   corelisters.NodeLister
	queue   workqueue.TypedRateLimitingInterface[string]
	workers int
}

// newPodSimulator registers the pod informer (indexed by node) and its handlers on factory; call
// it before the factory starts the pod informer.
func newPodSimulator(runner *podRunner, factory informers.SharedInformerFactory, workers int) *podSimulator {
	podInformer := factory.Core().V1().Pods().Informer()
	s := &podSimulator{
		runner:  runner,
		pods:    factory.Core().V1().Pods().Lister(),
		nodes:   factory.Core().V1().Nodes().Lister(),
		queue:   workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 10*time.Second)),
		workers: workers,
	}
	_ = podInformer.AddIndexers(cache.Indexers{podsByNode: func(obj interface{}) ([]string, error) {
		if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
			return []string{pod.Spec.NodeName}, nil
		}
		return nil, nil
	}})
	enqueue := func(obj interface{}) {
		if pod, ok := obj.(*corev1.Pod); ok && podNeedsWork(pod) {
			if key, err := cache.MetaNamespaceKeyFunc(pod); err == nil {
				s.queue.Add(key)
			}
		}
	}
	_, _ = podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
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
			bound, err := podInformer.GetIndexer().ByIndex(podsByNode, node.Name)
			if err != nil {
				return
			}
			for _, pod := range bound {
				enqueue(pod)
			}
		},
	})
	return s
}

// run works the queue until ctx ends.
func (s *podSimulator) run(ctx context.Context) {
	defer s.queue.ShutDown()
	for i := 0; i < s.workers; i++ {
		go func() {
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
	if pod.DeletionTimestamp != nil {
		// The containers have stopped: the kubelet removes the pod for good.
		err := s.runner.client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			err = nil
		}
		if err == nil {
			s.runner.forget(pod.UID)
		}
		return err
	}
	_, err = s.runner.run(ctx, pod, node)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err // a conflict is retried from the cache's newer copy
}
