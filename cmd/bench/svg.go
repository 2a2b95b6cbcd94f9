package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"slices"
	"strings"
)

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"}

const (
	panelW, panelH = 420, 220
	padL, padR     = 64, 16
	padT, padB     = 28, 36
	legendW        = 170
	rowH           = panelH + padT + padB + 16
)

// writeSVG draws, per scenario, throughput and latency (p50 solid, p99
// dashed, log scale) against concurrency, one line per system.
func writeSVG(path string, rep *report) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	renderSVG(f, rep)
	return f.Close()
}

func renderSVG(w io.Writer, rep *report) {
	width := 2*(panelW+padL+padR) + legendW
	height := 40 + rowH*len(rep.Scenarios)
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", width, height)
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(w, `<text x="10" y="20" font-size="14" font-weight="bold">toolbus bench %s — %d CPUs — %s</text>`+"\n",
		html.EscapeString(rep.Date), rep.Machine.CPUs, html.EscapeString(rep.Topology))
	for i, sr := range rep.Scenarios {
		y0 := 40 + i*rowH
		systems := systemsOf(sr)
		concs := slices.Compact(slices.Sorted(slices.Values(pointConcs(&sr))))
		unit := "calls/s"
		tp := func(p point) float64 { return p.CallsPerSec }
		if sr.Units != "" {
			unit = sr.Units + "/s"
			tp = func(p point) float64 { return p.UnitsPerSec }
		}
		var lines []plotLine
		for k, s := range systems {
			lines = append(lines, plotLine{color: palette[k%len(palette)], values: valuesOf(sr, s, concs, tp)})
		}
		drawPanel(w, padL, y0, sr.Name+": throughput ("+unit+")", concs, lines, false)
		lines = lines[:0]
		for k, s := range systems {
			c := palette[k%len(palette)]
			lines = append(lines,
				plotLine{color: c, values: valuesOf(sr, s, concs, func(p point) float64 { return p.Latency.P50 })},
				plotLine{color: c, dashed: true, values: valuesOf(sr, s, concs, func(p point) float64 { return p.Latency.P99 })})
		}
		drawPanel(w, 2*padL+padR+panelW, y0, sr.Name+": latency p50 — p99 - - (log)", concs, lines, true)
		lx := 2*(panelW+padL+padR) + 8
		for k, s := range systems {
			ly := y0 + padT + 14*k + 10
			fmt.Fprintf(w, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`, lx, ly-4, lx+18, ly-4, palette[k%len(palette)])
			fmt.Fprintf(w, `<text x="%d" y="%d">%s</text>`+"\n", lx+24, ly, html.EscapeString(s))
		}
	}
	fmt.Fprintln(w, "</svg>")
}

type plotLine struct {
	color  string
	dashed bool
	values []float64 // per concurrency; NaN where not measured
}

func systemsOf(sr scenarioReport) []string {
	var s []string
	for _, p := range sr.Points {
		if !slices.Contains(s, p.System) {
			s = append(s, p.System)
		}
	}
	return s
}

func valuesOf(sr scenarioReport, system string, concs []int, f func(point) float64) []float64 {
	v := make([]float64, len(concs))
	for i, c := range concs {
		v[i] = math.NaN()
		for _, p := range sr.Points {
			if p.System == system && p.Conc == c && p.OK > 0 {
				v[i] = f(p)
			}
		}
	}
	return v
}

// drawPanel draws axes and lines; x is the concurrency list at even
// steps, y is linear from 0 or, for latency, log10.
func drawPanel(w io.Writer, x0, y0 int, title string, concs []int, lines []plotLine, logY bool) {
	fmt.Fprintf(w, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", x0, y0+padT-10, html.EscapeString(title))
	top, bottom := float64(y0+padT), float64(y0+padT+panelH)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, l := range lines {
		for _, v := range l.values {
			if !math.IsNaN(v) && v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if math.IsInf(hi, -1) {
		lo, hi = 1, 10
	}
	var yOf func(v float64) float64
	var ticks []float64
	if logY {
		a, b := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
		if a == b {
			b++
		}
		yOf = func(v float64) float64 { return bottom - (math.Log10(v)-a)/(b-a)*(bottom-top) }
		for e := a; e <= b; e++ {
			ticks = append(ticks, math.Pow(10, e))
		}
	} else {
		step := niceStep(hi * 1.1 / 4)
		top4 := step * math.Ceil(hi*1.1/step)
		yOf = func(v float64) float64 { return bottom - v/top4*(bottom-top) }
		for t := 0.0; t <= top4+step/2; t += step {
			ticks = append(ticks, t)
		}
	}
	xOf := func(i int) float64 {
		if len(concs) == 1 {
			return float64(x0) + panelW/2
		}
		return float64(x0) + 10 + float64(i)*(panelW-20)/float64(len(concs)-1)
	}
	fmt.Fprintf(w, `<rect x="%d" y="%.0f" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", x0, top, panelW, panelH)
	for _, t := range ticks {
		y := yOf(t)
		label := human(t)
		if logY {
			label = us(t)
		}
		fmt.Fprintf(w, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n",
			x0, y, x0+panelW, y, x0-4, y+4, label)
	}
	for i, c := range concs {
		fmt.Fprintf(w, `<text x="%.1f" y="%.0f" text-anchor="middle">c=%d</text>`+"\n", xOf(i), bottom+16, c)
	}
	for _, l := range lines {
		var pts []string
		for i, v := range l.values {
			if math.IsNaN(v) || (logY && v <= 0) {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(i), yOf(v)))
		}
		if len(pts) == 0 {
			continue
		}
		dash := ""
		if l.dashed {
			dash = ` stroke-dasharray="5,4"`
		}
		fmt.Fprintf(w, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), l.color, dash)
		for _, p := range pts {
			xy := strings.Split(p, ",")
			fmt.Fprintf(w, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`, xy[0], xy[1], l.color)
		}
		fmt.Fprintln(w)
	}
}

// niceStep rounds a raw tick step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}
