// Package textfmt formats figures, and tables for the terminal, Markdown,
// CSV and HTML, the same way in every report of throng. A Table is the one
// model of a report's table: its renderers (Write, Markdown, CSV, HTML)
// show the same rows and cells.
package textfmt

import (
	"encoding/csv"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// Num formats a number with thousands separators; numbers under 100 that
// are not whole keep about three significant digits. NaN and infinities
// print as "–".
func Num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	if a := math.Abs(v); a < 100 && v != math.Trunc(v) {
		d := 3
		switch {
		case a >= 10:
			d = 1
		case a >= 1:
			d = 2
		}
		return strconv.FormatFloat(v, 'f', d, 64)
	}
	s := strconv.FormatInt(int64(math.Round(math.Abs(v))), 10)
	var b strings.Builder
	if v < 0 {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Sig formats a counter with about three significant digits.
func Sig(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	switch a := math.Abs(v); {
	case a >= 1000:
		return Num(v)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a == 0:
		return "0"
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// Ms formats milliseconds ("0.123 ms", "12.3 ms", "123 ms", "1.23 s").
func Ms(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case v >= 1000:
		return strconv.FormatFloat(v/1000, 'f', 2, 64) + " s"
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64) + " ms"
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64) + " ms"
	}
	return strconv.FormatFloat(v, 'f', 3, 64) + " ms"
}

// Secs formats seconds ("9.50 s", "2m05s").
func Secs(v float64) string {
	if v >= 120 {
		m := int(v) / 60
		return fmt.Sprintf("%dm%02.0fs", m, v-float64(m*60))
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + " s"
}

// Pct formats a fraction as a percentage with two decimals.
func Pct(v float64) string { return strconv.FormatFloat(100*v, 'f', 2, 64) + "%" }

// BytesRate formats bytes per second.
func BytesRate(v float64) string { return Bytes(v) + "/s" }

// Bytes formats a number of bytes with a decimal unit: 512 B, 1.5 KB,
// 2.25 GB, 3.00 TB.
func Bytes(v float64) string {
	switch {
	case v >= 1e12:
		return fmt.Sprintf("%.2f TB", v/1e12)
	case v >= 1e9:
		return fmt.Sprintf("%.2f GB", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.2f MB", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1f KB", v/1e3)
	}
	return fmt.Sprintf("%.0f B", v)
}

// Table is a column-aligned table: the first column, and the columns Left
// says, are left-aligned; the others (numbers) right-aligned.
type Table struct {
	Rows [][]string
	Left func(col int, header string) bool // optional
}

// Add appends a row; the first row is the header.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

func (t *Table) left(i int) bool {
	if i == 0 {
		return true
	}
	if t.Left == nil || len(t.Rows) == 0 || i >= len(t.Rows[0]) {
		return false
	}
	return t.Left(i, t.Rows[0][i])
}

// Write prints the table with columns two spaces apart.
func (t *Table) Write(w io.Writer) error {
	widths := map[int]int{}
	for _, r := range t.Rows {
		for i, c := range r {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for _, r := range t.Rows {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-len([]rune(c)))
			switch {
			case i == 0:
				b.WriteString(c + pad)
			case t.left(i):
				b.WriteString("  " + c + pad)
			default:
				b.WriteString("  " + pad + c)
			}
		}
		if _, err := fmt.Fprintf(w, "%s\n", strings.TrimRight(b.String(), " ")); err != nil {
			return err
		}
	}
	return nil
}

// Markdown prints the table as a GitHub table, numbers right-aligned.
func (t *Table) Markdown(w io.Writer) error {
	for i, r := range t.Rows {
		esc := make([]string, len(r))
		for j, c := range r {
			esc[j] = MarkdownEscape(c)
		}
		if _, err := fmt.Fprintf(w, "| %s |\n", strings.Join(esc, " | ")); err != nil {
			return err
		}
		if i == 0 {
			align := make([]string, len(r))
			for j := range r {
				align[j] = "---:"
				if t.left(j) {
					align[j] = ":---"
				}
			}
			if _, err := fmt.Fprintf(w, "|%s|\n", strings.Join(align, "|")); err != nil {
				return err
			}
		}
	}
	return nil
}

// CSV writes the table as RFC 4180 CSV, the header first, each cell as
// shown in the other renderers.
func (t *Table) CSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	for _, r := range t.Rows {
		if err := cw.Write(r); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// HTML writes the table as an HTML table with the caption (none when
// empty): the first row is the head, the first cell of each other row
// names it (th scope=row); left-aligned columns get class "l". Every cell
// is escaped.
func (t *Table) HTML(w io.Writer, caption string) error {
	if len(t.Rows) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("<table>\n")
	if caption != "" {
		fmt.Fprintf(&b, "<caption>%s</caption>\n", html.EscapeString(caption))
	}
	b.WriteString("<thead><tr>")
	for i, c := range t.Rows[0] {
		fmt.Fprintf(&b, "<th%s>%s</th>", t.class(i), html.EscapeString(c))
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for _, r := range t.Rows[1:] {
		b.WriteString("<tr>")
		for i, c := range r {
			if i == 0 {
				fmt.Fprintf(&b, "<th scope=\"row\">%s</th>", html.EscapeString(c))
			} else {
				fmt.Fprintf(&b, "<td%s>%s</td>", t.class(i), html.EscapeString(c))
			}
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody>\n</table>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func (t *Table) class(i int) string {
	if i > 0 && t.left(i) {
		return ` class="l"`
	}
	return ""
}

// MarkdownEscape makes a cell safe inside a Markdown table.
func MarkdownEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "*", `\*`, "_", `\_`, "<", "&lt;", "`", "\\`", "\n", " ").Replace(s)
}
