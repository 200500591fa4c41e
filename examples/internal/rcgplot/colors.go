package rcgplot

// Colors gives each method one SVG colour for svgplot.Curve.Color, so that a method looks the same in every figure.
var Colors = map[string]string{"RCG": "#d62728", "RG": "#ff7f0e", "CG": "#1f77b4", "GD": "#7f7f7f", "VBEM": "#2ca02c", "Old": "#9467bd"}
