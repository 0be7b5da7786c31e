package threshold

import (
	"fmt"
	"strings"

	"github.com/throng-io/throng/internal/result"
)

// invalidWhy says which repetitions are not valid and why, in short.
func invalidWhy(run *result.Run) string {
	var out []string
	for i := range run.Repetitions {
		v := result.ValidityOf(&run.Meta, &run.Repetitions[i])
		for _, c := range v.Checks {
			if c.Status == result.Fail || c.Status == result.Unknown {
				who := ""
				if len(run.Repetitions) > 1 {
					who = fmt.Sprintf("repetition %d: ", i+1)
				}
				out = append(out, who+c.Name+" "+c.Status+" ("+c.Message+")")
			}
		}
	}
	return strings.Join(out, "; ")
}

// Record is the outcome as kept in the result.
func (o Outcome) Record() result.ThresholdOutcome {
	r := result.ThresholdOutcome{Threshold: o.Threshold.Text, Phase: o.Phase, Value: result.Num(o.Value),
		Limit: result.Num(o.Threshold.Value), Unit: o.Threshold.Unit, Pass: o.Pass, Message: o.Message, Default: o.Threshold.Default, Expr: o.Threshold.Expr}
	for _, v := range o.Repetitions {
		r.Repetitions = append(r.Repetitions, result.Num(v))
	}
	return r
}

// Records converts outcomes for the result.
func Records(outs []Outcome) []result.ThresholdOutcome {
	var r []result.ThresholdOutcome
	for _, o := range outs {
		r = append(r, o.Record())
	}
	return r
}
