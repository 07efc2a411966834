// Command planner-controlplane runs a throwaway Kubernetes control plane in one process, on
// 127.0.0.1 only: embedded etcd, kube-apiserver, kube-scheduler, the kube-controller-manager
// controllers plans depend on, and a node simulator standing in for the kubelets. It loads a
// kubectl List, waits until the cluster has settled, writes a kubeconfig and a readiness marker
// into its state directory, and runs until SIGTERM or SIGINT.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// Exit codes planner maps to its own (2 for the List's faults).
const (
	exitOK       = 0
	exitFailed   = 1 // the control plane could not start or settle (see the log)
	exitUsage    = 64
	exitBadList  = 65 // the List file is unreadable or not a List; error.json names the item
	exitRejected = 66 // the API server refused a List object; error.json quotes it
)

// File names in the state directory.
const (
	readyFile      = "ready.json"
	errorFile      = "error.json"
	kubeconfigFile = "kubeconfig"
)

// profileKey marks a context whose start is being CPU-profiled.
type profileKey struct{}

type flags struct {
	stateDir        string
	loadPath        string
	profile         string
	port            int
	readyTimeout    time.Duration
	concurrency     int
	statusInterval  time.Duration
	leaseInterval   time.Duration
	pending         string
	simulateWorkers int
	verbosity       int
	cpuProfile      string
}

func parseFlags(args []string) (*flags, error) {
	o := &flags{}
	fs := flag.NewFlagSet("planner-controlplane", flag.ContinueOnError)
	fs.StringVar(&o.stateDir, "state-dir", "", "directory for etcd's data, certificates, the kubeconfig and ready.json (required)")
	fs.StringVar(&o.loadPath, "load", "", "kubectl List (JSON) to load once the API server is up")
	fs.StringVar(&o.profile, "profile", profileDefault, "scheduler profile: default, or binpack (NodeResourcesFit MostAllocated)")
	fs.IntVar(&o.port, "port", 0, "API server port on 127.0.0.1 (0: any free port; a port in use: another one)")
	fs.DurationVar(&o.readyTimeout, "ready-timeout", 10*time.Minute, "how long to wait for the API server and for the loaded cluster to settle")
	fs.IntVar(&o.concurrency, "load-concurrency", 64, "objects created at once while loading")
	fs.DurationVar(&o.statusInterval, "node-status-interval", 5*time.Minute, "how often simulated kubelets refresh node conditions")
	fs.DurationVar(&o.leaseInterval, "node-lease-interval", 60*time.Second, "how often simulated kubelets renew node leases")
	fs.StringVar(&o.pending, "pending", "gate", "pending pods of the List: gate (held by the planner.io/hold scheduling gate) or schedule")
	fs.IntVar(&o.simulateWorkers, "simulator-workers", 32, "concurrent status writers of the node simulator")
	fs.IntVar(&o.verbosity, "v", 0, "log verbosity of the Kubernetes components")
	fs.StringVar(&o.cpuProfile, "cpu-profile", "", "write a Go CPU profile of the start (until ready) to this file")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case o.stateDir == "":
		return nil, errors.New("--state-dir is required")
	case o.pending != "gate" && o.pending != "schedule":
		return nil, fmt.Errorf("--pending must be gate or schedule, not %q", o.pending)
	case o.concurrency < 1 || o.simulateWorkers < 1:
		return nil, errors.New("--load-concurrency and --simulator-workers must be at least 1")
	case o.leaseInterval < time.Second || o.statusInterval < time.Second:
		return nil, errors.New("--node-lease-interval and --node-status-interval must be at least 1s")
	}
	if _, err := schedulerConfig(o.profile, ""); err != nil {
		return nil, err
	}
	return o, nil
}

func main() {
	opts, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "planner-controlplane:", err)
		os.Exit(exitUsage)
	}
	tuneGC()
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	_ = klogFlags.Set("v", strconv.Itoa(opts.verbosity))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, opts)
	stop()
	klog.Flush()
	os.Exit(code)
}

// tuneGC trades memory for CPU: a CPU profile of a 1,000-node load spent a quarter of its time in
// the garbage collector at the default GOGC=100. The collector runs at 400% growth, with a soft
// memory limit of a third of the machine's memory (it collects harder near the limit). GOGC or
// GOMEMLIMIT in the environment win.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		var info syscall.Sysinfo_t
		if syscall.Sysinfo(&info) == nil && info.Totalram > 0 {
			debug.SetMemoryLimit(int64(uint64(info.Totalram) * uint64(info.Unit) / 3))
		}
	}
}

// cpuSeconds is the CPU time (user and system) this process has used.
func cpuSeconds() float64 {
	var usage syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &usage) != nil {
		return 0
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano()).Seconds()
}

func roundMillis(seconds float64) float64 { return math.Round(seconds*1000) / 1000 }

// run starts everything, loads the List, writes the markers and waits for a signal.
func run(ctx context.Context, o *flags) int {
	started := time.Now()
	marks, cpuMarks := map[string]float64{}, map[string]float64{}
	var marksMu sync.Mutex
	mark := func(step string) { // the first time a step was done: seconds since the start, CPU seconds used
		marksMu.Lock()
		defer marksMu.Unlock()
		if _, done := marks[step]; !done {
			marks[step] = roundMillis(time.Since(started).Seconds())
			cpuMarks[step] = roundMillis(cpuSeconds())
		}
	}
	if o.cpuProfile != "" {
		if f, err := os.Create(o.cpuProfile); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer func() { pprof.StopCPUProfile(); f.Close() }() // also on a failed start
				ctx = context.WithValue(ctx, profileKey{}, f)
			}
		}
	}
	fail := func(code int, err error) int {
		fmt.Fprintln(os.Stderr, "planner-controlplane:", err)
		return code
	}
	stateDir, err := filepath.Abs(o.stateDir)
	if err != nil {
		return fail(exitFailed, err)
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return fail(exitFailed, err)
	}
	for _, name := range []string{readyFile, errorFile} {
		_ = os.Remove(filepath.Join(stateDir, name))
	}
	// The List is read (10 CPU-seconds for a 10,000-node List) while etcd and the API server start,
	// and the credentials are generated while etcd starts. A List the binary cannot read stops the
	// start before the load (planner's own reader has refused most bad Lists before).
	type listRead struct {
		items []listItem
		err   error
	}
	listDone := make(chan listRead, 1)
	go func() {
		if o.loadPath == "" {
			listDone <- listRead{}
			return
		}
		items, err := readList(o.loadPath)
		mark("listRead")
		listDone <- listRead{items, err}
	}()
	type credsMade struct {
		creds *credentials
		err   error
	}
	credsDone := make(chan credsMade, 1)
	go func() {
		creds, err := writeCredentials(filepath.Join(stateDir, "pki"))
		credsDone <- credsMade{creds, err}
	}()
	store, err := startEtcd(filepath.Join(stateDir, "etcd"), o.readyTimeout)
	if err != nil {
		return fail(exitFailed, err)
	}
	defer store.Close()
	mark("etcdServing")
	made := <-credsDone
	if made.err != nil {
		return fail(exitFailed, made.err)
	}
	creds := made.creds
	listener, portInUse, err := listenLoopback(o.port)
	if err != nil {
		return fail(exitFailed, fmt.Errorf("API server listener: %w", err))
	}
	port := listener.Addr().(*net.TCPAddr).Port
	if portInUse {
		klog.InfoS("requested API server port in use, using another", "requested", o.port, "port", port)
	}
	serverURL := "https://" + net.JoinHostPort(loopbackHost, strconv.Itoa(port))

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	failed := make(chan error, 4)
	done := make(chan struct{}, 4)
	goComponent := func(name string, runComponent func() error) {
		go func() {
			defer func() { done <- struct{}{} }()
			if err := runComponent(); err != nil && ctx.Err() == nil {
				failed <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	running := 0
	goComponent("kube-apiserver", func() error {
		return runAPIServer(ctx, apiServerArgs(store.ClientURL, port, creds, filepath.Join(stateDir, "pki")), listener)
	})
	running++
	abandon := false // set when exiting because of the List: nothing is worth a graceful stop
	stopAll := func() {
		cancel()
		if abandon {
			return
		}
		timeout := time.After(30 * time.Second)
		for ; running > 0; running-- {
			select {
			case <-done:
			case <-timeout:
				klog.InfoS("components still stopping after 30s; exiting")
				return
			}
		}
	}
	defer stopAll()

	cfg := restConfig(serverURL, creds, "planner-controlplane")
	if err := waitAPIServerReady(ctx, cfg, failed, o.readyTimeout); err != nil {
		return fail(exitFailed, err)
	}
	serving := time.Since(started)
	mark("apiServerServing")
	kubeconfigPath := filepath.Join(stateDir, kubeconfigFile)
	if err := writeKubeconfig(kubeconfigPath, serverURL, creds); err != nil {
		return fail(exitFailed, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fail(exitFailed, err)
	}

	// The node simulator watches nodes before the load, so their leases are written as they
	// arrive. Pods are run by the loader as it creates them; the pod simulator (and its pod
	// informer, which would only see the load twice over) starts after the load.
	factory := informers.NewSharedInformerFactory(client, 0)
	nodes := newNodeSimulator(client, factory, o.statusInterval, o.leaseInterval, o.simulateWorkers)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	go nodes.run(ctx)
	runner := newPodRunner(client)

	read := <-listDone
	if read.err != nil {
		abandon = true
		_ = writeJSON(filepath.Join(stateDir, errorFile), map[string]string{"error": "bad-list", "message": read.err.Error()})
		return fail(exitBadList, read.err)
	}
	items := read.items
	var loaded *loadResult
	if o.loadPath != "" {
		l := &loader{client: client, concurrency: o.concurrency, runner: runner, mark: mark, opts: prepareOptions{GatePending: o.pending == "gate", Now: time.Now()}}
		loaded, err = l.load(ctx, items)
		var r *rejection
		var bad *badListError
		switch {
		case errors.As(err, &r):
			abandon = true
			_ = writeJSON(filepath.Join(stateDir, errorFile), map[string]interface{}{"error": "rejected", "object": r, "message": r.Error()})
			return fail(exitRejected, r)
		case errors.As(err, &bad):
			abandon = true
			_ = writeJSON(filepath.Join(stateDir, errorFile), map[string]string{"error": "bad-list", "message": bad.Error()})
			return fail(exitBadList, bad)
		case err != nil:
			return fail(exitFailed, err)
		}
		klog.InfoS("loaded", "seconds", loaded.Seconds, "created", loaded.Created)
	}
	mark("loaded")
	pods := newPodSimulator(runner, factory, o.simulateWorkers)
	factory.Policy().V1().PodDisruptionBudgets().Informer()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	go pods.run(ctx)
	mark("simulatorSynced")

	// The scheduler and controllers start on the loaded state: no controller races the load
	// (a ReplicaSet created before its pods would otherwise create replacements).
	schedulerPath := filepath.Join(stateDir, "scheduler.yaml")
	config, err := schedulerConfig(o.profile, kubeconfigPath)
	if err != nil {
		return fail(exitUsage, err)
	}
	if err := writeFileAtomic(schedulerPath, []byte(config)); err != nil {
		return fail(exitFailed, err)
	}
	goComponent("kube-scheduler", func() error { return runScheduler(ctx, schedulerPath) })
	running++
	goComponent("kube-controller-manager", func() error { return runControllerManager(ctx, kubeconfigPath) })
	running++
	mark("componentsStarted")

	counts, err := waitSettled(ctx, factory, nodes.leaseCount, failed, o.readyTimeout, mark)
	if err != nil {
		return fail(exitFailed, err)
	}
	ready := readiness{
		PID: os.Getpid(), Server: serverURL, APIServerPort: port, EtcdClientPort: store.ClientPort,
		RequestedPort: o.port, PortWasInUse: portInUse, Kubeconfig: kubeconfigPath, StateDir: stateDir,
		Profile: o.profile, Load: loaded, Nodes: counts.Nodes, RunningPods: counts.RunningPods, PDBs: counts.PDBs,
		StartSeconds: serving.Seconds(), ReadySeconds: time.Since(started).Seconds(),
	}
	mark("ready")
	marksMu.Lock()
	ready.SecondsSinceStart, ready.CPUSecondsSinceStart = marks, cpuMarks
	marksMu.Unlock()
	if ctx.Value(profileKey{}) != nil {
		pprof.StopCPUProfile()
	}
	if err := writeJSON(filepath.Join(stateDir, readyFile), ready); err != nil {
		return fail(exitFailed, err)
	}
	nodes.startHeartbeats()
	klog.InfoS("ready", "server", serverURL, "seconds", ready.ReadySeconds)
	select {
	case <-ctx.Done():
		_ = os.Remove(filepath.Join(stateDir, readyFile))
		return exitOK
	case err := <-failed:
		_ = os.Remove(filepath.Join(stateDir, readyFile))
		return fail(exitFailed, err)
	}
}
