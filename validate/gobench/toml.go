package main

// A small TOML writer for the scale suite's file: tables of fixed values and of measured
// series, each series a value per point (map size, slice size) and per repetition, written
// as the median over repetitions and, for the headline figures, every repetition.

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

type table struct {
	name, comment string
	scalar        bool // one point: write numbers, not arrays
	fixed         []string
	order         []string
	runs          map[string]bool
	vals          map[string][][]float64 // key -> [point][repetition]
}

func newTable(name, comment string, scalar bool) *table {
	return &table{name: name, comment: comment, scalar: scalar, runs: map[string]bool{},
		vals: map[string][][]float64{}}
}

func (t *table) set(key string, value any) {
	t.fixed = append(t.fixed, key+" = "+tomlValue(value))
}

// add records one repetition's value of key at point; withRuns also writes key_runs.
func (t *table) add(key string, point int, v float64, withRuns bool) {
	if _, ok := t.vals[key]; !ok {
		t.order = append(t.order, key)
	}
	for len(t.vals[key]) <= point {
		t.vals[key] = append(t.vals[key], nil)
	}
	t.vals[key][point] = append(t.vals[key][point], v)
	t.runs[key] = t.runs[key] || withRuns
}

func (t *table) write(b *strings.Builder) {
	if t.comment != "" {
		for _, line := range strings.Split(t.comment, "\n") {
			fmt.Fprintf(b, "# %s\n", line)
		}
	}
	fmt.Fprintf(b, "[%s]\n", t.name)
	for _, line := range t.fixed {
		fmt.Fprintln(b, line)
	}
	for _, key := range t.order {
		points := t.vals[key]
		meds := make([]float64, len(points))
		for i, reps := range points {
			meds[i] = median(reps)
		}
		if t.scalar {
			fmt.Fprintf(b, "%s = %s\n", key, tomlValue(meds[0]))
			if t.runs[key] {
				fmt.Fprintf(b, "%s_runs = %s\n", key, tomlValue(points[0]))
			}
			continue
		}
		fmt.Fprintf(b, "%s = %s\n", key, tomlValue(meds))
		if t.runs[key] {
			fmt.Fprintf(b, "%s_runs = %s\n", key, tomlValue(points))
		}
	}
	fmt.Fprintln(b)
}

// medians returns key's median per point (nil when key was never recorded).
func (t *table) medians(key string) []float64 {
	var out []float64
	for _, reps := range t.vals[key] {
		out = append(out, median(reps))
	}
	return out
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64{}, xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func tomlFloat(x float64) string {
	switch {
	case math.IsNaN(x):
		return "nan"
	case math.IsInf(x, 0):
		return strings.Replace(strconv.FormatFloat(x, 'g', -1, 64), "Inf", "inf", 1)
	}
	s := strconv.FormatFloat(x, 'g', 5, 64)
	if !strings.ContainsAny(s, ".e") { // keep it a float: "12" would read as an integer
		s += ".0"
	}
	return s
}

func tomlValue(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return tomlFloat(x)
	case []int:
		parts := make([]string, len(x))
		for i, y := range x {
			parts[i] = strconv.Itoa(y)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []float64:
		parts := make([]string, len(x))
		for i, y := range x {
			parts[i] = tomlFloat(y)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case [][]float64:
		parts := make([]string, len(x))
		for i, y := range x {
			parts[i] = tomlValue(y)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []string:
		parts := make([]string, len(x))
		for i, y := range x {
			parts[i] = strconv.Quote(y)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	panic(fmt.Sprintf("tomlValue: unsupported %T", v))
}
