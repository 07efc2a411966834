package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
)

// controllers are the kube-controller-manager controllers plans depend on: workload owners keep
// their replicas (ReplicaSet, Deployment, StatefulSet, Job), the disruption controller computes
// each PodDisruptionBudget's disruptionsAllowed, the garbage collector and namespace controller
// clean up after deletions, and the resource claim controller creates claims from templates (DRA).
// No service account or token controller: see apiServerArgs.
var controllers = []string{
	names.ReplicaSetController,
	names.DeploymentController,
	names.StatefulSetController,
	names.JobController,
	names.DisruptionController,
	names.GarbageCollectorController,
	names.NamespaceController,
	names.ResourceClaimController,
}

// runControllerManager runs the controllers until ctx ends, without leader election and with its
// secure port off.
func runControllerManager(ctx context.Context, kubeconfigPath string) error {
	s, err := options.NewKubeControllerManagerOptions()
	if err != nil {
		return err
	}
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	sets := s.Flags(app.KnownControllers(), app.ControllersDisabledByDefault(), app.ControllerAliases())
	s.ParsedFlags = &sets
	for _, set := range sets.FlagSets {
		fs.AddFlagSet(set)
	}
	args := []string{
		"--kubeconfig=" + kubeconfigPath,
		"--controllers=" + strings.Join(controllers, ","),
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
		"--kube-api-qps=1000",
		"--kube-api-burst=2000",
		// One disruption worker (the default) computes a loaded cluster's budgets one status
		// write at a time: 570 budgets took 30 s on a loaded machine.
		"--concurrent-disruption-syncs=16",
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("kube-controller-manager flags: %w", err)
	}
	if err := s.ComponentGlobalsRegistry.Set(); err != nil {
		return err
	}
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	c, err := s.Config(ctx, app.KnownControllers(), app.ControllersDisabledByDefault(), app.ControllerAliases())
	if err != nil {
		return fmt.Errorf("kube-controller-manager: %w", err)
	}
	return app.Run(ctx, c.Complete())
}
