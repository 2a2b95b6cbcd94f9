package skill

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// fitting's choice, over catalogs of random names and sizes: within
// MaxAnnounced, a skill in only with every later skill of its name,
// and no skill out that fits beside those in with every later skill of
// its name in. Catalogs of thousands of skills take the same way.
func TestFittingLeavesOutNothingThatFits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for c := range 2000 {
		n, names := 2+r.IntN(40), 1+r.IntN(12)
		if c%500 == 0 {
			n, names = 5000, 2000
		}
		all := make([]Announced, n)
		sizes := make([]int, n)
		for i := range all {
			all[i].Name = fmt.Sprint(r.IntN(names))
			sizes[i] = r.IntN(MaxAnnounced / (1 + r.IntN(n)))
			if r.IntN(50) == 0 {
				sizes[i] = -1
			}
		}
		keep := fitting(all, sizes)
		size := 0
		for i, k := range keep {
			if k {
				size += sizes[i]
			}
		}
		if size > MaxAnnounced {
			t.Fatalf("catalog %d: %d bytes in; want %d at most", c, size, MaxAnnounced)
		}
		for i := range all {
			laterIn := true
			for j := i + 1; j < n; j++ {
				if all[j].Name == all[i].Name && !keep[j] {
					laterIn = false
				}
			}
			switch {
			case keep[i] && (sizes[i] < 0 || !laterIn):
				t.Fatalf("catalog %d: skill %d (%s, %d bytes) in, with a later one of its name out or no bytes", c, i, all[i].Name, sizes[i])
			case !keep[i] && laterIn && sizes[i] >= 0 && size+sizes[i] <= MaxAnnounced:
				t.Fatalf("catalog %d: skill %d (%s, %d bytes) out, though it fits beside the %d bytes in and every later skill of its name is in", c, i, all[i].Name, sizes[i], size)
			}
		}
	}
}
