// Command reference prints, for one seed, the arrival order of pods and the node names that the
// reference simulator of the PWR paper (Fr4nz83/PWR-plugin-kubernetes, a fork of the FGD artifact
// hkust-adsl/kubernetes-scheduler-simulator) uses when run with `-tune LOAD -tuneseed SEED
// --shuffle-pod=true`, so that benchmarks/reference_equivalence.py can replay the reference's own
// seeds without running it (its Go simulator takes about 40 minutes a run on 2 cores).
//
// The reference draws everything from Go's shared math/rand source, in this order (pkg/simulator):
//  1. rand.Seed(SEED), then one rand.Int() (an argument of a debug log line, evaluated even when
//     the line is not printed);
//  2. the pods sorted by name, then rand.Shuffle;
//  3. copies drawn with rand.Intn over the pods sorted by name, appended while the GPU milli
//     requested stays within LOAD x capacity; the stop test compares the total with the copy's
//     per-device milli (as the reference does), and the copy is named <pod>-tuned-<i>;
//  4. DRAWS further values taken by the scheduler's start-up (measured: 10; see -draws);
//  5. the nodes sorted by name, then rand.Perm: node i is renamed %04d-<name> with the i-th value.
//
// The scheduler breaks score ties by the smallest node name, so the prefixes are the tie ranks.
//
// Output, one per line: "arrival <pod name>" in arrival order, then "node <prefixed name>".
//
// Usage: go run ./benchmarks/reference -seed 42 [-load 1.3] [-draws 10] POD_CSV NODE_CSV
package main

import (
	"bufio"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"sort"
	"strconv"
)

type pod struct {
	name       string
	milliEach  int64 // GPU milli per device (0 for a CPU-only pod)
	milliTotal int64
}

func readCSV(path string, columns ...string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	at := map[string]int{}
	for i, h := range header {
		at[h] = i
	}
	var rows [][]string
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		row := make([]string, len(columns))
		for j, c := range columns {
			i, ok := at[c]
			if !ok {
				return nil, fmt.Errorf("%s: missing column %s", path, c)
			}
			row[j] = rec[i]
		}
		rows = append(rows, row)
	}
}

func number(path, field, text string) int64 {
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %s %q is not a whole number\n", path, field, text)
		os.Exit(2)
	}
	return v
}

func main() {
	seed := flag.Int64("seed", 42, "the reference's -tuneseed")
	load := flag.Float64("load", 1.3, "the reference's -tune: GPU milli requested in all, as a share of capacity")
	draws := flag.Int("draws", 10, "values the scheduler's start-up takes from the shared source before the nodes are named")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: reference -seed N [-load 1.3] [-draws 10] POD_CSV NODE_CSV")
		os.Exit(2)
	}
	podPath, nodePath := flag.Arg(0), flag.Arg(1)
	podRows, err := readCSV(podPath, "name", "num_gpu", "gpu_milli")
	if err == nil {
		var nodeRows [][]string
		nodeRows, err = readCSV(nodePath, "sn", "gpu")
		if err == nil {
			run(podPath, podRows, nodePath, nodeRows, *seed, *load, *draws)
			return
		}
	}
	fmt.Fprintln(os.Stderr, err)
	os.Exit(2)
}

func run(podPath string, podRows [][]string, nodePath string, nodeRows [][]string, seed int64, load float64, draws int) {
	pods := make([]pod, 0, len(podRows))
	var requested int64
	for _, r := range podRows {
		count, milli := number(podPath, "num_gpu", r[1]), number(podPath, "gpu_milli", r[2])
		if count == 0 {
			milli = 0
		}
		pods = append(pods, pod{r[0], milli, milli * count})
		requested += milli * count
	}
	var capacity int64
	nodes := make([]string, 0, len(nodeRows))
	for _, r := range nodeRows {
		nodes = append(nodes, r[0])
		capacity += 1000 * number(nodePath, "gpu", r[1])
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].name < pods[j].name })
	byName := append([]pod(nil), pods...)

	rand.Seed(seed)
	_ = rand.Int()
	rand.Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
	target := load * float64(capacity)
	if float64(requested) > target {
		fmt.Fprintln(os.Stderr, "the pod list already requests more than -load x capacity; the reference then removes pods, which this tool does not model")
		os.Exit(2)
	}
	for i := 0; ; i++ { // until a copy would pass the target, as the reference loops
		copied := byName[rand.Intn(len(byName))]
		if float64(requested+copied.milliEach) > target {
			break
		}
		requested += copied.milliTotal
		pods = append(pods, pod{fmt.Sprintf("%s-tuned-%d", copied.name, i), copied.milliEach, copied.milliTotal})
	}
	for i := 0; i < draws; i++ {
		rand.Int63()
	}
	sort.Strings(nodes)
	prefix := rand.Perm(len(nodes))
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for _, p := range pods {
		fmt.Fprintf(out, "arrival %s\n", p.name)
	}
	for i, n := range nodes {
		fmt.Fprintf(out, "node %04d-%s\n", prefix[i], n)
	}
}
