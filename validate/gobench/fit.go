package main

// The fitted tables of the scale suite's file, the laws the contention model
// (simbatch/contention) takes, fitted to what the suite measured here:
//
//   - [costs]: a fully random insert or probe (the map_size section: every operation to a
//     random bucket) costs put_ns (probe_ns) up to reference_entries entries, and
//     put_ns_per_doubling (probe_ns_per_doubling) more per doubling beyond (MapCosts.put_at):
//     least squares on the relative error over every size and GOMAXPROCS, the knee
//     (reference_entries, shared by both) chosen to minimise the largest error;
//   - [memory]: an insert in a slice of s hashes into one bucket's table costs the random
//     insert's cost x (a/s + (1-a) (1 + s/s0)^-gamma): a share a of a random insert is paid once
//     per visit to a table (its header, the first lines it touches), and the longer the visit,
//     the more of the table's lines and page translations are at hand and the more of the
//     independent misses the core overlaps. a, s0 and gamma are fitted to the slice_size
//     section's owner-worker design (no goroutine per slice), with a per-slice cost o per
//     GOMAXPROCS: new_cpu_ns_per_hash(s) = put_at(n_tx) (a/s + (1-a)(1 + s/s0)^-gamma) + o/s;
//   - [memory_fit]: how well.
//
// -refit FILE re-derives them from a file the suite wrote, without measuring again.

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// fitInputs are the measured medians the fits read, per GOMAXPROCS.
type fitInputs struct {
	entries   []float64
	insert    map[int][]float64 // map_size dolthub_hint_insert_cpu_ns
	probe     map[int][]float64 // map_size dolthub_hint_probe_cpu_ns
	sliceTx   float64
	perSlices []float64
	sliceNew  map[int][]float64 // slice_size new_cpu_ns_per_hash
}

func newFitInputs() fitInputs {
	return fitInputs{insert: map[int][]float64{}, probe: map[int][]float64{}, sliceNew: map[int][]float64{}}
}

type randomLaw struct{ base, perDoubling, knee, maxErr float64 }

func (l randomLaw) at(n float64) float64 {
	return l.base + l.perDoubling*math.Max(0, math.Log2(n/l.knee))
}

// lawAt fits base and perDoubling at a given knee (least squares on the relative error).
func lawAt(entries []float64, ys map[int][]float64, knee float64) randomLaw {
	var a11, a12, a22, b1, b2 float64
	for _, y := range ys {
		for i, v := range y {
			x := math.Max(0, math.Log2(entries[i]/knee))
			w := 1 / (v * v)
			a11, a12, a22, b1, b2 = a11+w, a12+w*x, a22+w*x*x, b1+w*v, b2+w*x*v
		}
	}
	det := a11*a22 - a12*a12
	l := randomLaw{knee: knee}
	if det == 0 { // every size at or below the knee
		l.base = b1 / a11
	} else {
		l.base, l.perDoubling = (b1*a22-b2*a12)/det, (a11*b2-a12*b1)/det
	}
	for _, y := range ys {
		for i, v := range y {
			l.maxErr = math.Max(l.maxErr, math.Abs(l.at(entries[i])/v-1))
		}
	}
	return l
}

// randomLaws fits the insert and probe laws with one shared knee, on a grid of 2^(19..27).
func (f fitInputs) randomLaws() (ins, prb randomLaw) {
	best := math.Inf(1)
	for k := 0; k <= 160; k++ {
		knee := math.Pow(2, 19+float64(k)/20)
		i, p := lawAt(f.entries, f.insert, knee), lawAt(f.entries, f.probe, knee)
		if worst := math.Max(i.maxErr, p.maxErr); worst < best {
			best, ins, prb = worst, i, p
		}
	}
	return ins, prb
}

// reuse fits a, s0, gamma (shared) and o (per GOMAXPROCS, least squares given the others) by
// a grid search minimising the relative squared error; returns the largest relative error.
func (f fitInputs) reuse(c float64) (a, s0, gamma, maxErr float64) {
	best := math.Inf(1)
	for i := 0; i <= 180; i++ {
		try0 := math.Pow(10, 4.5*float64(i)/180) // 1 to ~31,600 hashes
		for j := 1; j <= 100; j++ {
			tryG := 1.5 * float64(j) / 100
			for k := 0; k <= 45; k++ {
				tryA := 0.02 * float64(k)
				var sq, worst float64
				for _, ys := range f.sliceNew {
					var num, den float64
					base := make([]float64, len(ys))
					for n, y := range ys {
						s := f.perSlices[n]
						base[n] = c * (tryA/s + (1-tryA)*math.Pow(1+s/try0, -tryG))
						num, den = num+(y-base[n])/s/y/y, den+1/(s*s*y*y)
					}
					o := math.Max(0, num/den)
					for n, y := range ys {
						e := (base[n]+o/f.perSlices[n])/y - 1
						sq, worst = sq+e*e, math.Max(worst, math.Abs(e))
					}
				}
				if sq < best {
					best, a, s0, gamma, maxErr = sq, tryA, try0, tryG, worst
				}
			}
		}
	}
	return a, s0, gamma, maxErr
}

// fitHeader starts the fitted tables in the file (-refit cuts the file there).
const fitHeader = "Fitted by gobench to the tables above"

func (f fitInputs) tables(procs []int) []*table {
	ins, prb := f.randomLaws()
	a, s0, gamma, reuseErr := f.reuse(ins.at(f.sliceTx))
	costs := newTable("costs", fitHeader+" (validate/gobench/fit.go; -refit FILE re-derives them):\n"+
		"this machine's fully random insert and probe (CPU ns) against the map's entries, MapCosts.put_at / probe_at:\n"+
		"flat up to reference_entries, *_per_doubling more per doubling beyond (the map_size section, every GOMAXPROCS).", true)
	costs.set("put_ns", round3(ins.base))
	costs.set("put_ns_per_doubling", round3(ins.perDoubling))
	costs.set("probe_ns", round3(prb.base))
	costs.set("probe_ns_per_doubling", round3(prb.perDoubling))
	costs.set("reference_entries", int(math.Round(ins.knee)))
	mem := newTable("memory", "The hashes-per-visit law (simbatch/contention/memory.py): an insert in a slice of s hashes into one\n"+
		"bucket's table costs the random insert's cost x (a/s + (1-a) (1 + s / slice_reuse_hashes)^-slice_reuse_exponent),\n"+
		"a = visit_share (the slice_size section's owner workers, every GOMAXPROCS, over [costs] at its block's size).", true)
	mem.set("slice_reuse_hashes", round3(s0))
	mem.set("slice_reuse_exponent", round3(gamma))
	mem.set("visit_share", round3(a))
	fit := newTable("memory_fit", "How well: the largest relative error over every point and GOMAXPROCS.", true)
	fit.set("random_insert_max_error", round3(ins.maxErr))
	fit.set("random_probe_max_error", round3(prb.maxErr))
	fit.set("slice_reuse_max_error", round3(reuseErr))
	fit.set("source", fmt.Sprintf("map_size (%d sizes) and slice_size (%d slice sizes), GOMAXPROCS %v",
		len(f.entries), len(f.perSlices), procs))
	return []*table{costs, mem, fit}
}

func (r *scaleRun) memoryFit() []*table {
	f := newFitInputs()
	for _, n := range r.entries {
		f.entries = append(f.entries, float64(n))
	}
	for _, s := range r.perSlices {
		f.perSlices = append(f.perSlices, float64(s))
	}
	f.sliceTx = float64(r.sliceTx)
	for _, p := range r.procs {
		f.insert[p] = r.mapPer[p].medians("dolthub_hint_insert_cpu_ns")
		f.probe[p] = r.mapPer[p].medians("dolthub_hint_probe_cpu_ns")
		f.sliceNew[p] = r.slicePer[p].medians("new_cpu_ns_per_hash")
	}
	return f.tables(r.procs)
}

func round3(x float64) float64 {
	if x == 0 {
		return 0
	}
	scale := math.Pow(10, 3-math.Ceil(math.Log10(math.Abs(x))))
	return math.Round(x*scale) / scale
}

var (
	tableLine = regexp.MustCompile(`^\[([a-z_.0-9]+)\]$`)
	arrayLine = regexp.MustCompile(`^([a-z_0-9]+) = \[([-0-9.e+, ]*)\]$`)
	scalar    = regexp.MustCompile(`^([a-z_0-9]+) = ([-0-9.e+]+)$`)
	procsKey  = regexp.MustCompile(`^(map_size|slice_size)\.gomaxprocs_([0-9]+)$`)
)

// refit rewrites the fitted tables of a file the scale suite wrote, from its measured tables.
func refit(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text := string(data)
	if i := strings.Index(text, "# "+fitHeader); i >= 0 {
		text = text[:i]
	}
	f := newFitInputs()
	procSet := map[int]bool{}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := tableLine.FindStringSubmatch(line); m != nil {
			section = m[1]
			continue
		}
		key, vals := "", []float64(nil)
		if m := arrayLine.FindStringSubmatch(line); m != nil {
			key = m[1]
			for _, s := range strings.Split(m[2], ",") {
				v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
				if err != nil {
					return fmt.Errorf("%s: [%s] %s: %v", path, section, key, err)
				}
				vals = append(vals, v)
			}
		} else if m := scalar.FindStringSubmatch(line); m != nil {
			key = m[1]
			v, _ := strconv.ParseFloat(m[2], 64)
			vals = []float64{v}
		} else {
			continue
		}
		switch {
		case section == "map_size" && key == "entries":
			f.entries = vals
		case section == "slice_size" && key == "n_tx":
			f.sliceTx = vals[0]
		case section == "slice_size" && key == "per_slice":
			f.perSlices = vals
		default:
			m := procsKey.FindStringSubmatch(section)
			if m == nil {
				continue
			}
			p, _ := strconv.Atoi(m[2])
			procSet[p] = true
			switch {
			case m[1] == "map_size" && key == "dolthub_hint_insert_cpu_ns":
				f.insert[p] = vals
			case m[1] == "map_size" && key == "dolthub_hint_probe_cpu_ns":
				f.probe[p] = vals
			case m[1] == "slice_size" && key == "new_cpu_ns_per_hash":
				f.sliceNew[p] = vals
			}
		}
	}
	if len(f.entries) == 0 || len(f.perSlices) == 0 || len(f.insert) == 0 || len(f.sliceNew) == 0 {
		return fmt.Errorf("%s: no [map_size] and [slice_size] tables to fit", path)
	}
	var procs []int
	for p := range procSet {
		procs = append(procs, p)
	}
	sort.Ints(procs)
	var b strings.Builder
	b.WriteString(strings.TrimRight(text, "\n") + "\n\n")
	for _, t := range f.tables(procs) {
		t.write(&b)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Print(b.String()[len(text):])
	return nil
}
