// Package stats holds the statistics behind throng's verdicts, as pure
// functions with known answers: Yuen's test of two trimmed means (Welch's
// t-test when nothing is trimmed), Holm's step-down adjustment of a family
// of p-values, the Mann–Kendall trend test with Sen's slope, and confidence
// intervals from batch means. Each function documents its method and the
// reference a test checks it against.
package stats
