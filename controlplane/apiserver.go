package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

// apiServerArgs are kube-apiserver's own flags for this control plane. Authentication is the one
// static token (anonymous off), authorization RBAC (the token's group is system:masters). The
// ServiceAccount admission plugin is off and no service account or token controller runs: pods
// never run here, and with the plugin on every loaded pod would need its service account to
// exist and would gain a token volume the snapshot never had. TaintNodesByCondition is off too: it
// taints every new node node.kubernetes.io/not-ready, a taint only the node lifecycle controller
// (not run: the simulated nodes are always Ready) would remove. Priority and fairness is off (one
// trusted client set; its queues only slow a bulk load); the endpoint reconciler is off (no
// kubernetes Service endpoints to keep).
func apiServerArgs(etcdURL string, port int, creds *credentials, certDir string) []string {
	return []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=" + loopbackHost,
		"--advertise-address=" + loopbackHost,
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certDir,
		"--tls-cert-file=" + creds.ServingCertFile,
		"--tls-private-key-file=" + creds.ServingKeyFile,
		"--token-auth-file=" + creds.TokenFile,
		"--anonymous-auth=false",
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + creds.SAPublicFile,
		"--service-account-signing-key-file=" + creds.SAKeyFile,
		"--service-cluster-ip-range=10.96.0.0/16",
		"--allow-privileged=true",
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		"--enable-priority-and-fairness=false",
		"--endpoint-reconciler-type=none",
		"--max-requests-inflight=1000",
		"--max-mutating-requests-inflight=500",
		"--profiling=false",
	}
}

// runAPIServer runs kube-apiserver with args on the open listener until ctx ends; it returns
// the server's error (nil after a clean stop).
func runAPIServer(ctx context.Context, args []string, listener net.Listener) error {
	s := options.NewServerRunOptions()
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, set := range s.Flags().FlagSets {
		fs.AddFlagSet(set)
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("kube-apiserver flags: %w", err)
	}
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return err
	}
	s.SecureServing.Listener = listener
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	completed, err := s.Complete(ctx)
	if err != nil {
		return fmt.Errorf("kube-apiserver options: %w", err)
	}
	if errs := completed.Validate(); len(errs) != 0 {
		return fmt.Errorf("kube-apiserver options: %w", utilerrors.NewAggregate(errs))
	}
	return app.Run(ctx, completed)
}

// waitAPIServerReady polls /readyz until it answers 200, the server fails, or the deadline passes.
func waitAPIServerReady(ctx context.Context, cfg *rest.Config, failed <-chan error, timeout time.Duration) error {
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: transport, Timeout: 5 * time.Second}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := client.Get(cfg.Host + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver not ready within %s (last: %v)", timeout, err)
		}
		select {
		case err := <-failed:
			return fmt.Errorf("kube-apiserver stopped: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
