// Package stats holds the statistics behind throng's verdicts, as pure
// functions with known answers: Yuen's test of two trimmed means (Welch's
// t-test when nothing is trimmed), Holm's and Benjamini–Hochberg's
// adjustments of a family of p-values, the Mann–Kendall trend test with
// Sen's slope (and its form for autocorrelated series), and confidence
// intervals from batch means with the autocorrelation they leave allowed
// for. Each function documents its method and the reference a test checks
// it against.
package stats
