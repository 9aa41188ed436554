package report

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
)

// The chart library and the page's own script and style, embedded so that the report
// is one file that works offline. uPlot is MIT-licensed; its licence travels with it,
// in assets/uplot/LICENSE and in a comment before its code in every report.
var (
	//go:embed assets/uplot/uPlot.iife.min.js
	uplotJS string
	//go:embed assets/uplot/uPlot.min.css
	uplotCSS string
	//go:embed assets/uplot/LICENSE
	uplotLicense string
	//go:embed assets/report.js
	reportJS string
	//go:embed assets/report.css
	reportCSS string
)

// uplotVersion is the vendored uPlot's version (assets/uplot/README.md).
const uplotVersion = "1.6.32"

var pageTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<title>{{.Title}}</title>
<style>{{.UplotCSS}}</style>
<style>{{.CSS}}</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="generated">cf-benchmark report, schema {{.Schema}} version {{.Version}}. Charts by uPlot {{.UplotVersion}} (MIT), embedded; this file fetches nothing.</p>
<noscript><pre class="text">{{.Text}}</pre></noscript>
<div id="report"></div>
<script type="application/json" id="report-data">{{.Data}}</script>
<script>{{.UplotJS}}</script>
<script>{{.JS}}</script>
</body>
</html>
`))

// WriteHTML writes the report as one self-contained HTML page: the JSON form embedded,
// rendered into tables and uPlot charts by an embedded script, with the text form for
// browsers without JavaScript. It prints to PDF (print styles keep charts whole).
func (r *Report) WriteHTML(w io.Writer) error {
	data, err := json.Marshal(r) // escapes <, > and &: safe inside a script element
	if err != nil {
		return fmt.Errorf("write the report as HTML: %w", err)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		return err
	}
	title := "cf-benchmark report"
	if len(r.Runs) > 0 {
		title = fmt.Sprintf("cf-benchmark report: %s (run %s)", r.Runs[0].Name, r.Runs[0].ID)
		if len(r.Runs) > 1 {
			title = fmt.Sprintf("cf-benchmark report: %d runs", len(r.Runs))
		}
	}
	err = pageTemplate.Execute(w, map[string]any{
		"Title": title, "Schema": r.Schema, "Version": r.Version, "Text": text.String(), "UplotVersion": uplotVersion,
		// Trusted, embedded content: the JSON is escaped by encoding/json, the
		// scripts and styles are ours and uPlot's, checked in.
		"Data":     template.JS(data),
		"UplotCSS": template.CSS(uplotCSS),
		"CSS":      template.CSS(reportCSS),
		"UplotJS":  template.JS("/*! uPlot " + uplotVersion + ", https://github.com/leeoniya/uPlot, vendored from the npm package uplot\n" + uplotLicense + "*/\n" + uplotJS),
		"JS":       template.JS(reportJS),
	})
	if err != nil {
		return fmt.Errorf("write the report as HTML: %w", err)
	}
	return nil
}
