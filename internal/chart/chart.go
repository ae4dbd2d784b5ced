// Package chart draws benchmark results as grouped bar charts in SVG, with
// gonum.org/v1/plot: one group of bars per measured case, one bar per
// implementation (warpkv's engines and their peers side by side), and
// targets as marks across the bars they apply to.
package chart

import (
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Chart is a grouped bar chart.
type Chart struct {
	Title  string
	YLabel string
	// Groups name the cases along the X axis.
	Groups []string
	// Series are the bars of every group, in legend order.
	Series []Series
	// Targets are drawn as marks over the bars they apply to.
	Targets []Target
	// Log draws the Y axis on a logarithmic scale (bars start at the
	// axis' bottom).
	Log bool
	// Format formats a value for the labels over the bars (nil: %.3g).
	Format func(float64) string
}

// Series is one implementation's values, one per group; NaN (or a
// non-positive value on a log scale) marks a case it did not run.
type Series struct {
	Name   string
	Values []float64
}

// Target is a goal for one series in one group (or for all the group's
// bars when Series is -1).
type Target struct {
	Group, Series int
	Value         float64
}

// targetColor is the color of target marks.
var targetColor = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}

// WriteSVG draws the chart and writes it to w as SVG. Its width grows with
// the number of bars.
func (c *Chart) WriteSVG(w io.Writer) error { return c.Write(w, "svg") }

// Write draws the chart in format ("svg", "png" or "pdf") to w.
func (c *Chart) Write(w io.Writer, format string) error {
	if len(c.Groups) == 0 || len(c.Series) == 0 {
		return fmt.Errorf("chart: nothing to draw (%d cases, %d series)", len(c.Groups), len(c.Series))
	}
	for _, s := range c.Series {
		if len(s.Values) != len(c.Groups) {
			return fmt.Errorf("chart: series %q has %d values for %d cases", s.Name, len(s.Values), len(c.Groups))
		}
	}
	p := plot.New()
	p.Title.Text = c.Title
	p.Y.Label.Text = c.YLabel
	p.Legend.Top = true
	p.Legend.Left = true
	p.Y.Tick.Label.Font.Size = 9
	valueFmt := c.Format
	if valueFmt == nil {
		valueFmt = func(v float64) string { return fmt.Sprintf("%.3g", v) }
	}
	p.Y.Tick.Marker = linearTicks{valueFmt}
	if c.Log {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	barWidth := vg.Points(14)
	bars := &groupedBars{chart: c, width: barWidth, format: valueFmt}
	p.Add(plotter.NewGrid(), bars)
	p.NominalX(c.Groups...)
	p.X.Tick.Label.Font.Size = 9
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	for i, s := range c.Series {
		p.Legend.Add(s.Name, swatch{plotutil.SoftColors[i%len(plotutil.SoftColors)]})
	}
	if len(c.Targets) > 0 {
		p.Legend.Add("target", targetSwatch{})
	}
	nBars := len(c.Groups) * len(c.Series)
	width := max(vg.Length(nBars)*barWidth*1.5+2*vg.Inch, 6*vg.Inch)
	wt, err := p.WriterTo(width, 4.5*vg.Inch, format)
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	if _, err := wt.WriteTo(w); err != nil {
		return fmt.Errorf("chart: writing %s: %w", format, err)
	}
	return nil
}

// groupedBars draws every series' bars side by side around each group's X
// position, a value label over each bar, and the target marks.
type groupedBars struct {
	chart  *Chart
	width  vg.Length
	format func(float64) string
}

// present reports whether v can be drawn.
func (g *groupedBars) present(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && (v > 0 || !g.chart.Log && v >= 0)
}

// DataRange implements plot.DataRanger: the groups along X, the values and
// targets along Y (from 0, or from half the smallest value on a log scale).
func (g *groupedBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	c := g.chart
	ymin, ymax = math.Inf(1), math.Inf(-1)
	see := func(v float64) {
		if g.present(v) {
			ymin, ymax = min(ymin, v), max(ymax, v)
		}
	}
	for _, s := range c.Series {
		for _, v := range s.Values {
			see(v)
		}
	}
	for _, t := range c.Targets {
		see(t.Value)
	}
	if math.IsInf(ymax, -1) {
		ymin, ymax = 0, 1
	}
	// Headroom above the tallest bar for its label and the legend.
	if c.Log {
		ymin, ymax = ymin/2, ymax*math.Pow(ymax/ymin*2, 0.3)*2
	} else {
		ymin, ymax = 0, ymax*1.4
	}
	return -0.5, float64(len(c.Groups)) - 0.5, ymin, ymax
}

// offset returns the X offset of series s's bar from its group's center.
func (g *groupedBars) offset(s int) vg.Length {
	n := len(g.chart.Series)
	return (vg.Length(s) - vg.Length(n-1)/2) * g.width
}

// Plot implements plot.Plotter.
func (g *groupedBars) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	ch := g.chart
	bottom := trY(plt.Y.Min)
	sty := draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, 6), Rotation: math.Pi / 2,
		XAlign: draw.XLeft, YAlign: draw.YCenter, Handler: plt.TextHandler}
	for s, ser := range ch.Series {
		col := plotutil.SoftColors[s%len(plotutil.SoftColors)]
		for i, v := range ser.Values {
			if !g.present(v) {
				continue
			}
			x := trX(float64(i)) + g.offset(s)
			top := trY(v)
			rect := vg.Rectangle{Min: vg.Point{X: x - g.width/2, Y: bottom}, Max: vg.Point{X: x + g.width/2, Y: top}}
			c.FillPolygon(col, c.ClipPolygonY([]vg.Point{rect.Min, {X: rect.Min.X, Y: rect.Max.Y}, rect.Max, {X: rect.Max.X, Y: rect.Min.Y}}))
			c.FillText(sty, vg.Point{X: x, Y: top + 2}, g.format(v))
		}
	}
	line := draw.LineStyle{Color: targetColor, Width: vg.Points(2)}
	for _, t := range ch.Targets {
		if !g.present(t.Value) || t.Group < 0 || t.Group >= len(ch.Groups) {
			continue
		}
		y := trY(t.Value)
		x0, x1 := trX(float64(t.Group))+g.offset(0)-g.width/2, trX(float64(t.Group))+g.offset(len(ch.Series)-1)+g.width/2
		if t.Series >= 0 {
			x0 = trX(float64(t.Group)) + g.offset(t.Series) - g.width/2
			x1 = x0 + g.width
		}
		c.StrokeLines(line, c.ClipLinesY([]vg.Point{{X: x0 - 2, Y: y}, {X: x1 + 2, Y: y}})...)
	}
}

// swatch is a series' legend entry: a filled square.
type swatch struct{ color color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(s.color, []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y}})
}

// targetSwatch is the targets' legend entry: a red line.
type targetSwatch struct{}

func (targetSwatch) Thumbnail(c *draw.Canvas) {
	y := (c.Min.Y + c.Max.Y) / 2
	c.StrokeLine2(draw.LineStyle{Color: targetColor, Width: vg.Points(2)}, c.Min.X, y, c.Max.X, y)
}

// linearTicks labels about five evenly spaced values of a 1-2-5 step with
// the chart's format.
type linearTicks struct{ format func(float64) string }

// Ticks implements plot.Ticker.
func (t linearTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return nil
	}
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		label := t.format(v)
		if v == 0 {
			label = "0"
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: label})
	}
	return ticks
}
