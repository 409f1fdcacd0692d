package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// chart is one curve plot of a run: how a cost grows with load.
// Every series of a chart was measured in the same run, so peers share the
// axes.
type chart struct {
	file, title, xLabel, yLabel string
	logX                        bool
	series                      []*series
}

// series is one path's points on a chart, in the order measured.
type series struct {
	name   string
	xs, ys []float64
}

// point adds (x, y) to the series name of the chart file, creating both on
// first use; title and labels come from the first call.
func (w *world) point(file, title, xLabel, yLabel string, logX bool, name string, x, y float64) {
	i := slices.IndexFunc(w.charts, func(c *chart) bool { return c.file == file })
	if i < 0 {
		w.charts = append(w.charts, &chart{file: file, title: title, xLabel: xLabel, yLabel: yLabel, logX: logX})
		i = len(w.charts) - 1
	}
	c := w.charts[i]
	j := slices.IndexFunc(c.series, func(s *series) bool { return s.name == name })
	if j < 0 {
		c.series = append(c.series, &series{name: name})
		j = len(c.series) - 1
	}
	c.series[j].xs = append(c.series[j].xs, x)
	c.series[j].ys = append(c.series[j].ys, y)
}

// palette gives peers fixed, distinguishable colours (dual-proxy first).
var palette = []color.Color{
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
}

// writeSVG renders c to dir/c.file (SVG, 6×4 in).
func (c *chart) writeSVG(dir string) error {
	p := plot.New()
	p.Title.Text = c.title
	p.X.Label.Text, p.Y.Label.Text = c.xLabel, c.yLabel
	if c.logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	for i, s := range c.series {
		xy := make(plotter.XYs, 0, len(s.xs))
		for k := range s.xs {
			if c.logX && s.xs[k] <= 0 {
				continue
			}
			xy = append(xy, plotter.XY{X: s.xs[k], Y: s.ys[k]})
		}
		if len(xy) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return fmt.Errorf("%s %s: %w", c.file, s.name, err)
		}
		col := palette[i%len(palette)]
		l.Color, pts.Color = col, col
		l.Width = vg.Points(1.5)
		pts.Shape = draw.CircleGlyph{}
		p.Add(l, pts)
		p.Legend.Add(s.name, l, pts)
	}
	if c.logX && p.X.Min == p.X.Max && p.X.Min > 0 {
		// One load measured (a run with one -pool-streams value): gonum
		// widens an empty range by ±1, which from 1 reaches 0, where a log
		// scale panics. A one-point chart spans a factor of 2 either side.
		p.X.Min, p.X.Max = p.X.Min/2, p.X.Max*2
	}
	p.Legend.Top, p.Legend.Left = true, true
	return p.Save(6*vg.Inch, 4*vg.Inch, filepath.Join(dir, c.file))
}

// writeCharts renders every chart of the run into dir.
func (w *world) writeCharts(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, c := range w.charts {
		if err := c.writeSVG(dir); err != nil {
			return err
		}
	}
	return nil
}
