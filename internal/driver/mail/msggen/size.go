package msggen

import "math"

// MaxSize bounds one generated message (above the servers' usual
// limit of 50 MiB, so a send can provoke their refusal).
const MaxSize = 64 << 20

// Size draws a message size with mean m: m itself unless realistic, else
// from the realistic distribution below, bounded to [600, min(40m,
// MaxSize)].
func Size(r *RNG, m int, realistic bool) int {
	if !realistic {
		return m
	}
	// Realistic: 80% text messages of a few KB, 20% carrying attachments
	// whose sizes have a long (log-normal) tail; the mixture's mean is m.
	small := math.Min(0.2*float64(m), 8000)
	if float64(m) <= 8000 || r.Float() < 0.8 {
		return clampSize(lognormal(r, small, 0.6), m)
	}
	big := (float64(m) - 0.8*small) / 0.2
	return clampSize(lognormal(r, big, 1.0), m)
}

func clampSize(x float64, m int) int {
	return int(math.Max(600, math.Min(x, math.Min(40*float64(m), MaxSize))))
}

// lognormal draws from a log-normal distribution with the given mean.
func lognormal(r *RNG, mean, sigma float64) float64 {
	mu := math.Log(mean) - sigma*sigma/2
	return math.Exp(mu + sigma*r.Norm())
}
