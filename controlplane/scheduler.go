package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// Scheduler profiles selectable with --profile.
const (
	profileDefault = "default"
	profileBinpack = "binpack"
)

// binpackResources are the resources the binpack profile's MostAllocated score weighs: a node is
// preferred the fuller it already is in CPU, memory and whole GPUs.
var binpackResources = []string{"cpu", "memory", "nvidia.com/gpu"}

// schedulerConfig renders the KubeSchedulerConfiguration for profile: the default profile is
// kube-scheduler's own defaults; binpack changes only NodeResourcesFit's scoring strategy to
// MostAllocated. Leader election is off (one scheduler).
func schedulerConfig(profile, kubeconfigPath string) (string, error) {
	var b strings.Builder
	b.WriteString("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
	b.WriteString("leaderElection:\n  leaderElect: false\n")
	fmt.Fprintf(&b, "clientConnection:\n  kubeconfig: %q\n  qps: 1000\n  burst: 2000\n  contentType: application/vnd.kubernetes.protobuf\n", kubeconfigPath)
	b.WriteString("profiles:\n- schedulerName: default-scheduler\n")
	switch profile {
	case profileDefault:
	case profileBinpack:
		b.WriteString("  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: MostAllocated\n        resources:\n")
		for _, name := range binpackResources {
			fmt.Fprintf(&b, "        - name: %s\n          weight: 1\n", name)
		}
	default:
		return "", fmt.Errorf("unknown scheduler profile %q (choose %s or %s)", profile, profileDefault, profileBinpack)
	}
	return b.String(), nil
}

// runScheduler runs kube-scheduler with the configuration file until ctx ends. Its secure port is
// off (0): nothing else listens.
func runScheduler(ctx context.Context, configPath string) error {
	opts := options.NewOptions()
	fs := pflag.NewFlagSet("kube-scheduler", pflag.ContinueOnError)
	for _, set := range opts.Flags.FlagSets {
		fs.AddFlagSet(set)
	}
	if err := fs.Parse([]string{"--config=" + configPath, "--secure-port=0"}); err != nil {
		return fmt.Errorf("kube-scheduler flags: %w", err)
	}
	if err := opts.ComponentGlobalsRegistry.Set(); err != nil {
		return err
	}
	cc, sched, err := app.Setup(ctx, opts)
	if err != nil {
		return fmt.Errorf("kube-scheduler: %w", err)
	}
	return app.Run(ctx, cc, sched)
}
