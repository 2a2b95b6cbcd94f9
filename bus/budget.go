package bus

import "sync"

// memBudget is a counted amount of memory that goroutines take from and
// give back, waiting while it is short.
type memBudget struct {
	mu   sync.Mutex
	cond sync.Cond
	size int
	left int
}

func newMemBudget(size int) *memBudget {
	b := &memBudget{size: size, left: size}
	b.cond.L = &b.mu
	return b
}

// acquire takes n (at most the whole budget, so that any request can be
// taken alone), waiting until that much is left, and returns what it took.
func (b *memBudget) acquire(n int) int {
	n = min(n, b.size)
	b.mu.Lock()
	for b.left < n {
		b.cond.Wait()
	}
	b.left -= n
	b.mu.Unlock()
	return n
}

// release gives back what acquire took.
func (b *memBudget) release(n int) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.left += n
	b.mu.Unlock()
	b.cond.Broadcast()
}
