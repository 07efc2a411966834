package main

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// loadProfile decodes the rendered configuration with kube-scheduler's own loader.
func loadProfile(t *testing.T, profile string) *config.KubeSchedulerConfiguration {
	t.Helper()
	text, err := schedulerConfig(profile, "/tmp/kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "scheduler.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := options.LoadConfigFromFile(klog.Background(), path)
	if err != nil {
		t.Fatalf("kube-scheduler refuses the %s configuration: %v\n%s", profile, err, text)
	}
	return cfg
}

func fitScoring(t *testing.T, cfg *config.KubeSchedulerConfiguration) *config.ScoringStrategy {
	t.Helper()
	if len(cfg.Profiles) != 1 || cfg.Profiles[0].SchedulerName != "default-scheduler" {
		t.Fatalf("profiles %+v, want one default-scheduler", cfg.Profiles)
	}
	for _, pc := range cfg.Profiles[0].PluginConfig {
		if pc.Name == "NodeResourcesFit" {
			return pc.Args.(*config.NodeResourcesFitArgs).ScoringStrategy
		}
	}
	return nil
}

func TestBinpackProfileScoresMostAllocated(t *testing.T) {
	cfg := loadProfile(t, profileBinpack)
	s := fitScoring(t, cfg)
	if s == nil || s.Type != config.MostAllocated {
		t.Fatalf("binpack scoring %+v, want MostAllocated", s)
	}
	names := map[string]bool{}
	for _, r := range s.Resources {
		names[r.Name] = true
	}
	if !names["cpu"] || !names["memory"] || !names["nvidia.com/gpu"] {
		t.Fatalf("binpack resources %+v", s.Resources)
	}
	if cfg.LeaderElection.LeaderElect {
		t.Fatal("leader election on")
	}
}

func TestDefaultProfileKeepsKubeSchedulerDefaults(t *testing.T) {
	if s := fitScoring(t, loadProfile(t, profileDefault)); s != nil && s.Type != config.LeastAllocated {
		t.Fatalf("default scoring %+v, want kube-scheduler's LeastAllocated", s)
	}
}

func TestUnknownProfileRefused(t *testing.T) {
	if _, err := schedulerConfig("spread", ""); err == nil {
		t.Fatal("unknown profile accepted")
	}
}
