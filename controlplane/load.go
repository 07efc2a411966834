package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// loadResult says what a load created, skipped and derived.
type loadResult struct {
	Created                map[string]int      `json:"created"`
	Skipped                map[string]int      `json:"skipped"` // kinds this control plane does not serve
	Derived                map[string][]string `json:"derived"` // objects created because pods name them
	OwnerReferencesDropped int                 `json:"ownerReferencesDropped"`
	GatedPendingPods       int                 `json:"gatedPendingPods"`
	BoundPods              int                 `json:"boundPods"`
	RunPods                int                 `json:"runPods"` // bound pods whose status the loader wrote (their node is in the List)
	Seconds                float64             `json:"seconds"`
	PhaseSeconds           map[string]float64  `json:"phaseSeconds"` // each phase's creates (pods: create and status)
}

// rejection is a List object the API server refused: its kind, namespace, name and the server's
// own message.
type rejection struct {
	Index     int    `json:"index"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Reason    string `json:"reason"`
	Code      int32  `json:"code"`
	Message   string `json:"message"`
	// DerivedFrom names what an object the List lacks was derived from (index -1).
	DerivedFrom string `json:"derivedFrom,omitempty"`
}

func (r *rejection) Error() string {
	if r.Index < 0 { // made by the loader: derive.go, owners.go, runtimeclass.go
		from := r.DerivedFrom
		if from == "" {
			from = "the objects that name it"
		}
		return fmt.Sprintf("the API server rejected %s %s, which the List lacks and the loader derived from %s: %s", r.Kind, qualifiedName(r.Namespace, r.Name), from, r.Message)
	}
	return fmt.Sprintf("the API server rejected items[%d] %s %s: %s", r.Index, r.Kind, qualifiedName(r.Namespace, r.Name), r.Message)
}

// loader creates a List's objects, phase by phase (what others refer to first), each phase with
// bounded concurrency.
type loader struct {
	client      kubernetes.Interface
	concurrency int
	opts        prepareOptions
	runner      *podRunner        // runs each pod bound to a loaded node right after its create
	mark        func(step string) // called with "load <phase>" after each phase

	mu     sync.Mutex
	owners map[ownerKey]types.UID
	nodes  map[string]*corev1.Node // the loaded nodes, as the server returned them
	stats  prepareStats
	result loadResult
}

// phaseOf orders kinds: namespaces and classes, then nodes and device inventory, then workload
// owners (by ownership depth), then what selects or claims pods, then pods.
var phaseOf = map[string]int{
	"Namespace": 0, "PriorityClass": 0, "DeviceClass": 0, "RuntimeClass": 0,
	"Node": 1, "ResourceSlice": 1,
	"Deployment": 2, "StatefulSet": 2, "DaemonSet": 2, "Job": 2, "ReplicaSet": 2,
	"PodDisruptionBudget": 3, "ResourceClaimTemplate": 3, "ResourceClaim": 3,
	"Pod": 4,
}

// phaseNames name the phases in ready.json's load.phaseSeconds.
var phaseNames = [5]string{"classes", "nodes", "owners", "budgets", "pods"}

// load creates items; it returns a *rejection when the API server refuses one.
func (l *loader) load(ctx context.Context, items []listItem) (*loadResult, error) {
	start := time.Now()
	l.owners = map[ownerKey]types.UID{}
	l.nodes = map[string]*corev1.Node{}
	l.result = loadResult{Created: map[string]int{}, Skipped: map[string]int{}, Derived: map[string][]string{}, PhaseSeconds: map[string]float64{}}
	var phases [5][]listItem
	for _, item := range items {
		phase, served := phaseOf[item.Kind]
		if item.Object == nil || !served {
			l.result.Skipped[item.Kind]++
			continue
		}
		phases[phase] = append(phases[phase], item)
	}
	derived, classForPriority, err := deriveObjects(items)
	if err != nil {
		return nil, err
	}
	l.opts.ClassForPriority = classForPriority
	runtimeClasses, err := deriveRuntimeClasses(items)
	if err != nil {
		return nil, err
	}
	derived = append(derived, runtimeClasses...)
	phases[0] = append(derived, phases[0]...)
	owners := deriveOwners(items)
	phases[2] = append(owners, phases[2]...)
	derived = append(derived, owners...)
	for phase, group := range phases {
		began := time.Now()
		levels := [][]listItem{group}
		if phase == 2 { // an owner owned by another (a ReplicaSet of a Deployment) waits for its owner's uid
			levels = ownershipLevels(group)
		}
		for _, level := range levels {
			if err := l.createAll(ctx, level); err != nil {
				return nil, err
			}
		}
		l.result.PhaseSeconds[phaseNames[phase]] = time.Since(began).Seconds()
		if l.mark != nil {
			l.mark("load " + phaseNames[phase])
		}
	}
	if err := l.restoreClaimStatuses(ctx, phases[3]); err != nil {
		return nil, err
	}
	for _, item := range derived {
		l.result.Created[item.Kind]--
		l.result.Derived[item.Kind] = append(l.result.Derived[item.Kind], item.Name)
	}
	for kind, n := range l.result.Created {
		if n <= 0 {
			delete(l.result.Created, kind)
		}
	}
	l.result.OwnerReferencesDropped = l.stats.OwnerReferencesDropped
	l.result.GatedPendingPods = l.stats.GatedPendingPods
	for _, item := range phases[4] {
		if item.Object.(*corev1.Pod).Spec.NodeName != "" {
			l.result.BoundPods++
		}
	}
	l.result.Seconds = time.Since(start).Seconds()
	return &l.result, nil
}

// createAll creates the items concurrently; when the server refuses some, the first in List order
// is returned.
func (l *loader) createAll(ctx context.Context, items []listItem) error {
	if len(items) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan listItem)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var refused []*rejection
	var failure error
	for w := 0; w < l.concurrency && w < len(items); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for item := range work {
				err := l.create(ctx, item)
				if err == nil || ctx.Err() != nil {
					continue
				}
				mu.Lock()
				var r *rejection
				if errors.As(err, &r) {
					refused = append(refused, r)
				} else if failure == nil {
					failure = err
				}
				mu.Unlock()
				cancel()
			}
		}()
	}
	for _, item := range items {
		if ctx.Err() != nil {
			break
		}
		work <- item
	}
	close(work)
	wg.Wait()
	if len(refused) > 0 {
		sort.Slice(refused, func(i, j int) bool { return refused[i].Index < refused[j].Index })
		return refused[0]
	}
	if failure != nil {
		return failure
	}
	return ctx.Err()
}

// create prepares and creates one object, recording a workload owner's new uid.
func (l *loader) create(ctx context.Context, item listItem) error {
	obj := item.Object.DeepCopyObject()
	l.mu.Lock()
	owners := l.owners
	l.mu.Unlock()
	var stats prepareStats
	l.mu.Lock() // prepareObject only reads owners; the lock keeps it consistent with writers
	prepareObject(obj, owners, l.opts, &stats)
	l.stats.OwnerReferencesDropped += stats.OwnerReferencesDropped
	l.stats.GatedPendingPods += stats.GatedPendingPods
	l.mu.Unlock()
	created, err := createObject(ctx, l.client, obj)
	if err != nil {
		if isExistingSystemObject(item, err) {
			return nil
		}
		return rejectionOf(item, err)
	}
	m, err := meta.Accessor(created)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.owners[ownerKey{item.Kind, item.Namespace, item.Name}] = m.GetUID()
	l.result.Created[item.Kind]++
	var node *corev1.Node
	switch o := created.(type) {
	case *corev1.Node:
		l.nodes[o.Name] = o
	case *corev1.Pod:
		node = l.nodes[o.Spec.NodeName]
	}
	l.mu.Unlock()
	if node == nil || l.runner == nil {
		return nil
	}
	// Its kubelet starts it (or, finished in the List, ends it): a status write of the node
	// simulator's, done here so that no controller ever sees the pod Pending.
	if _, err := l.runner.run(ctx, created.(*corev1.Pod), node); err != nil {
		return fmt.Errorf("running %s %s on node %s: %w", item.Kind, qualifiedName(item.Namespace, item.Name), node.Name, err)
	}
	l.mu.Lock()
	l.result.RunPods++
	l.mu.Unlock()
	return nil
}

// rejectionOf turns the API server's 4xx answer about item into a *rejection; other errors (the
// server failing, a lost connection) are returned as they are.
func rejectionOf(item listItem, err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code >= 400 && status.Status().Code < 500 {
		s := status.Status()
		return &rejection{Index: item.Index, Kind: item.Kind, Namespace: item.Namespace, Name: item.Name, Reason: string(s.Reason), Code: s.Code, Message: s.Message, DerivedFrom: item.DerivedFrom}
	}
	return fmt.Errorf("%s %s: %w", item.Kind, qualifiedName(item.Namespace, item.Name), err)
}

// isExistingSystemObject: a Namespace or PriorityClass the API server creates itself (default,
// kube-system, system-node-critical, ...) is already there; the List's copy is not an error.
func isExistingSystemObject(item listItem, err error) bool {
	return apierrors.IsAlreadyExists(err) && (item.Kind == "Namespace" || item.Kind == "PriorityClass")
}

// createObject creates obj through the typed client of its kind.
func createObject(ctx context.Context, c kubernetes.Interface, obj runtime.Object) (runtime.Object, error) {
	opts := metav1.CreateOptions{}
	switch o := obj.(type) {
	case *corev1.Namespace:
		return c.CoreV1().Namespaces().Create(ctx, o, opts)
	case *corev1.Node:
		return c.CoreV1().Nodes().Create(ctx, o, opts)
	case *corev1.Pod:
		return c.CoreV1().Pods(o.Namespace).Create(ctx, o, opts)
	case *schedulingv1.PriorityClass:
		return c.SchedulingV1().PriorityClasses().Create(ctx, o, opts)
	case *policyv1.PodDisruptionBudget:
		return c.PolicyV1().PodDisruptionBudgets(o.Namespace).Create(ctx, o, opts)
	case *appsv1.Deployment:
		return c.AppsV1().Deployments(o.Namespace).Create(ctx, o, opts)
	case *appsv1.ReplicaSet:
		return c.AppsV1().ReplicaSets(o.Namespace).Create(ctx, o, opts)
	case *appsv1.StatefulSet:
		return c.AppsV1().StatefulSets(o.Namespace).Create(ctx, o, opts)
	case *appsv1.DaemonSet:
		return c.AppsV1().DaemonSets(o.Namespace).Create(ctx, o, opts)
	case *batchv1.Job:
		return c.BatchV1().Jobs(o.Namespace).Create(ctx, o, opts)
	case *nodev1.RuntimeClass:
		return c.NodeV1().RuntimeClasses().Create(ctx, o, opts)
	case *resourcev1.DeviceClass:
		return c.ResourceV1().DeviceClasses().Create(ctx, o, opts)
	case *resourcev1.ResourceSlice:
		return c.ResourceV1().ResourceSlices().Create(ctx, o, opts)
	case *resourcev1.ResourceClaim:
		return c.ResourceV1().ResourceClaims(o.Namespace).Create(ctx, o, opts)
	case *resourcev1.ResourceClaimTemplate:
		return c.ResourceV1().ResourceClaimTemplates(o.Namespace).Create(ctx, o, opts)
	}
	return nil, fmt.Errorf("no client for %T", obj)
}

// ownershipLevels splits workload owners so that each comes after the owners it names that the
// List also holds (a ReplicaSet after its Deployment); a cycle ends up in the last level.
func ownershipLevels(items []listItem) [][]listItem {
	present := map[ownerKey]bool{}
	for _, item := range items {
		present[ownerKey{item.Kind, item.Namespace, item.Name}] = true
	}
	depth := map[ownerKey]int{}
	var depthOf func(item listItem, seen int) int
	byKey := map[ownerKey]listItem{}
	for _, item := range items {
		byKey[ownerKey{item.Kind, item.Namespace, item.Name}] = item
	}
	depthOf = func(item listItem, seen int) int {
		key := ownerKey{item.Kind, item.Namespace, item.Name}
		if d, ok := depth[key]; ok {
			return d
		}
		d := 0
		if m, err := meta.Accessor(item.Object); err == nil && seen < len(items) {
			for _, ref := range m.GetOwnerReferences() {
				owner := ownerKey{ref.Kind, item.Namespace, ref.Name}
				if present[owner] {
					d = max(d, 1+depthOf(byKey[owner], seen+1))
				}
			}
		}
		depth[key] = d
		return d
	}
	var levels [][]listItem
	for _, item := range items {
		d := depthOf(item, 0)
		for len(levels) <= d {
			levels = append(levels, nil)
		}
		levels[d] = append(levels[d], item)
	}
	return levels
}
