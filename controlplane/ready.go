package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/klog/v2"
)

// readiness is the marker written to the state directory once the control plane serves and the
// loaded List has settled; planner reads it (and its absence tells it to keep waiting).
type readiness struct {
	PID            int         `json:"pid"`
	Server         string      `json:"server"`
	APIServerPort  int         `json:"apiserverPort"`
	EtcdClientPort int         `json:"etcdClientPort"`
	RequestedPort  int         `json:"requestedPort"`
	PortWasInUse   bool        `json:"portWasInUse"`
	Kubeconfig     string      `json:"kubeconfig"`
	StateDir       string      `json:"stateDir"`
	Profile        string      `json:"profile"`
	Load           *loadResult `json:"load,omitempty"`
	Nodes          int         `json:"nodes"`
	RunningPods    int         `json:"runningPods"`
	PDBs           int         `json:"pdbs"`
	StartSeconds   float64     `json:"startSeconds"` // until the API server served
	ReadySeconds   float64     `json:"readySeconds"`
	// SecondsSinceStart is when each step of the start was first done: etcdServing,
	// apiServerServing, loaded, simulatorSynced, componentsStarted (the scheduler and the
	// controllers launched), nodesReady, nodeLeases, podsRunning, pdbsComputed, ready.
	SecondsSinceStart map[string]float64 `json:"secondsSinceStart"`
	// CPUSecondsSinceStart is the CPU time (user and system, every core) the process had used at
	// each of those steps: on a shared machine it says what a step cost when its wall time says
	// little.
	CPUSecondsSinceStart map[string]float64 `json:"cpuSecondsSinceStart"`
}

// settleCounts are what the readiness wait saw at its last look.
type settleCounts struct {
	Nodes, NotReadyNodes, NodeLeases, BoundPods, RunningPods, PDBs, PDBsUnobserved int
}

func (c settleCounts) settled() bool {
	return c.NotReadyNodes == 0 && c.NodeLeases >= c.Nodes && c.RunningPods == c.BoundPods && c.PDBsUnobserved == 0
}

// markDone marks each part of settling that holds.
func (c settleCounts) markDone(mark func(step string)) {
	if c.NotReadyNodes == 0 {
		mark("nodesReady")
	}
	if c.NodeLeases >= c.Nodes {
		mark("nodeLeases")
	}
	if c.RunningPods == c.BoundPods {
		mark("podsRunning")
	}
	if c.PDBsUnobserved == 0 {
		mark("pdbsComputed")
	}
}

// countSettle looks at the caches: every node Ready, every non-terminal pod bound to an existing
// node Running and Ready, every PodDisruptionBudget's status computed by the disruption controller
// for its current generation.
func countSettle(nodes corelisters.NodeLister, pods corelisters.PodLister, pdbs policylisters.PodDisruptionBudgetLister) (settleCounts, error) {
	var c settleCounts
	nodeList, err := nodes.List(everything)
	if err != nil {
		return c, err
	}
	known := make(map[string]bool, len(nodeList))
	for _, node := range nodeList {
		known[node.Name] = true
		c.Nodes++
		if !nodeReady(node) {
			c.NotReadyNodes++
		}
	}
	podList, err := pods.List(everything)
	if err != nil {
		return c, err
	}
	for _, pod := range podList {
		if pod.Spec.NodeName == "" || !known[pod.Spec.NodeName] || podTerminal(pod) || pod.DeletionTimestamp != nil {
			continue
		}
		c.BoundPods++
		if podRunningReady(pod) {
			c.RunningPods++
		}
	}
	budgets, err := pdbs.List(everything)
	if err != nil {
		return c, err
	}
	for _, pdb := range budgets {
		c.PDBs++
		if pdb.Status.ObservedGeneration < pdb.Generation {
			c.PDBsUnobserved++
		}
	}
	return c, nil
}

// waitSettled polls the caches until countSettle says settled, the deadline passes or a component
// fails.
func waitSettled(ctx context.Context, factory informers.SharedInformerFactory, leases func() int, failed <-chan error, timeout time.Duration, mark func(step string)) (settleCounts, error) {
	nodes := factory.Core().V1().Nodes().Lister()
	pods := factory.Core().V1().Pods().Lister()
	pdbs := factory.Policy().V1().PodDisruptionBudgets().Lister()
	deadline := time.Now().Add(timeout)
	nextLog := time.Now().Add(10 * time.Second)
	for {
		c, err := countSettle(nodes, pods, pdbs)
		c.NodeLeases = leases()
		if err == nil {
			c.markDone(mark)
		}
		if err == nil && c.settled() {
			return c, nil
		}
		if time.Now().After(nextLog) { // what a slow settle waits for, in the log
			klog.InfoS("settling", "nodes", c.Nodes, "notReady", c.NotReadyNodes, "leases", c.NodeLeases, "boundPods", c.BoundPods, "running", c.RunningPods, "pdbs", c.PDBs, "pdbsNotComputed", c.PDBsUnobserved)
			nextLog = time.Now().Add(10 * time.Second)
		}
		if time.Now().After(deadline) {
			return c, fmt.Errorf("not settled within %s: %d of %d nodes not Ready, %d with a lease, %d of %d bound pods Running, %d of %d PodDisruptionBudgets not yet computed",
				timeout, c.NotReadyNodes, c.Nodes, c.NodeLeases, c.RunningPods, c.BoundPods, c.PDBsUnobserved, c.PDBs)
		}
		select {
		case err := <-failed:
			return c, err
		case <-ctx.Done():
			return c, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// writeJSON writes v as indented JSON to path atomically.
func writeJSON(path string, v interface{}) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(data, '\n'))
}
