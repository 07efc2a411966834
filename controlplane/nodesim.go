package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// simulatorVersion is what simulated kubelets report as their version.
const simulatorVersion = "v1.37.2"

// nodeSimulator stands in for the kubelets of every node in the cluster: it keeps each node Ready
// (status conditions refreshed every statusInterval, a node lease renewed every leaseInterval),
// and, through its podSimulator, runs the pods bound to them.
type nodeSimulator struct {
	client         kubernetes.Interface
	factory        informers.SharedInformerFactory
	nodes          corelisters.NodeLister
	queue          workqueue.TypedRateLimitingInterface[string]
	statusInterval time.Duration
	leaseInterval  time.Duration
	workers        int

	// heartbeats: renew leases and refresh node conditions when due. Off until the control plane
	// is ready: nothing here reads a heartbeat (no node lifecycle controller runs), and during a
	// long load they cost more writes than the pods (10,000 nodes: 167 lease renewals a second at
	// a 60 s interval, and every node status again after 5 minutes).
	heartbeats atomic.Bool

	mu         sync.Mutex
	lastStatus map[string]time.Time
	leases     map[string]*coordinationv1.Lease
}

func newNodeSimulator(client kubernetes.Interface, factory informers.SharedInformerFactory, statusInterval, leaseInterval time.Duration, workers int) *nodeSimulator {
	s := &nodeSimulator{
		client:         client,
		factory:        factory,
		nodes:          factory.Core().V1().Nodes().Lister(),
		queue:          workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 10*time.Second)),
		statusInterval: statusInterval,
		leaseInterval:  leaseInterval,
		workers:        workers,
		lastStatus:     map[string]time.Time{},
		leases:         map[string]*coordinationv1.Lease{},
	}
	enqueue := func(obj interface{}) {
		if node, ok := obj.(*corev1.Node); ok && (!nodeReady(node) || !s.hasLease(node.Name)) {
			s.queue.Add(node.Name)
		}
	}
	_, _ = factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
	})
	return s
}

// hasLease says whether the node's lease was written.
func (s *nodeSimulator) hasLease(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leases[name] != nil
}

// leaseCount is how many nodes have a lease.
func (s *nodeSimulator) leaseCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.leases)
}

// run works the queue and refreshes heartbeats until ctx ends.
func (s *nodeSimulator) run(ctx context.Context) {
	defer s.queue.ShutDown()
	for i := 0; i < s.workers; i++ {
		go func() {
			for s.processNext(ctx) {
			}
		}()
	}
	ticker := time.NewTicker(s.leaseInterval / 4)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			s.enqueueDue()
		}
	}
}

// startHeartbeats turns on lease renewals and status refreshes.
func (s *nodeSimulator) startHeartbeats() { s.heartbeats.Store(true) }

// enqueueDue queues every node whose lease or status heartbeat is due.
func (s *nodeSimulator) enqueueDue() {
	if !s.heartbeats.Load() {
		return
	}
	nodes, err := s.nodes.List(everything)
	if err != nil {
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, node := range nodes {
		lease := s.leases[node.Name]
		if lease == nil || lease.Spec.RenewTime == nil || now.Sub(lease.Spec.RenewTime.Time) >= s.leaseInterval || !nodeReady(node) {
			s.queue.Add(node.Name)
		}
	}
}

func (s *nodeSimulator) processNext(ctx context.Context) bool {
	name, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(name)
	if err := s.sync(ctx, name); err != nil {
		if ctx.Err() == nil {
			klog.V(2).InfoS("node simulator: retrying", "node", name, "err", err)
			s.queue.AddRateLimited(name)
		}
		return true
	}
	s.queue.Forget(name)
	return true
}

// sync renews the node's lease when due and, when not Ready or its status heartbeat is due, its
// conditions.
func (s *nodeSimulator) sync(ctx context.Context, name string) error {
	node, err := s.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	now := time.Now()
	s.mu.Lock()
	lease := s.leases[name]
	last, seen := s.lastStatus[name]
	if !seen { // the loader (or whoever created it) just wrote its status
		last = now
		s.lastStatus[name] = now
	}
	beating := s.heartbeats.Load()
	statusDue := (beating && now.Sub(last) >= s.statusInterval) || !nodeReady(node)
	s.mu.Unlock()
	if lease == nil || lease.Spec.RenewTime == nil || (beating && now.Sub(lease.Spec.RenewTime.Time) >= s.leaseInterval) {
		if err := s.renewLease(ctx, node, lease); err != nil {
			return fmt.Errorf("lease: %w", err)
		}
	}
	if statusDue {
		updated := node.DeepCopy()
		setReadyNodeStatus(updated, now)
		if _, err := s.client.CoreV1().Nodes().UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return err
		}
		s.mu.Lock()
		s.lastStatus[name] = now
		s.mu.Unlock()
	}
	return nil
}

// renewLease creates or renews the node's lease in kube-node-lease, as a kubelet does; the last
// lease written is kept, so a renewal is one update (a conflict reads it again on the retry).
func (s *nodeSimulator) renewLease(ctx context.Context, node *corev1.Node, lease *coordinationv1.Lease) error {
	leases := s.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	duration := int32((4 * s.leaseInterval) / time.Second)
	var written *coordinationv1.Lease
	var err error
	if lease != nil {
		renewed := lease.DeepCopy()
		renewed.Spec.RenewTime = &now
		renewed.Spec.LeaseDurationSeconds = &duration
		written, err = leases.Update(ctx, renewed, metav1.UpdateOptions{})
	} else {
		written, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name:            node.Name,
				Namespace:       corev1.NamespaceNodeLease,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}},
			},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(node.Name), LeaseDurationSeconds: &duration, RenewTime: &now},
		}, metav1.CreateOptions{})
	}
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		current, getErr := leases.Get(ctx, node.Name, metav1.GetOptions{})
		s.mu.Lock()
		if getErr == nil {
			s.leases[node.Name] = current
		} else {
			delete(s.leases, node.Name)
		}
		s.mu.Unlock()
		return err // retried with the lease as it is now
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.leases[node.Name] = written
	s.mu.Unlock()
	return nil
}

// nodeReady says whether the node's Ready condition is True.
func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// setReadyNodeStatus sets the conditions, daemon endpoint and node info a healthy kubelet reports
// (capacity and allocatable are the loaded node's own and left alone).
func setReadyNodeStatus(node *corev1.Node, now time.Time) {
	stamp := metav1.NewTime(now)
	want := []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID"},
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "simulated by planner-controlplane"},
	}
	previous := map[corev1.NodeConditionType]corev1.NodeCondition{}
	for _, c := range node.Status.Conditions {
		previous[c.Type] = c
	}
	conditions := make([]corev1.NodeCondition, 0, len(want))
	for _, c := range want {
		c.LastHeartbeatTime = stamp
		c.LastTransitionTime = stamp
		if old, ok := previous[c.Type]; ok && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		conditions = append(conditions, c)
	}
	node.Status.Conditions = conditions
	node.Status.Phase = corev1.NodeRunning
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = 10250
	node.Status.NodeInfo.KubeletVersion = simulatorVersion
	if node.Status.NodeInfo.OperatingSystem == "" {
		node.Status.NodeInfo.OperatingSystem = "linux"
	}
	if node.Status.NodeInfo.Architecture == "" {
		node.Status.NodeInfo.Architecture = "amd64"
	}
	if len(node.Status.Addresses) == 0 {
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: node.Name}}
	}
}
