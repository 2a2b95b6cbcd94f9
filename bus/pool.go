package bus

import "time"

// pool reuses goroutines for calls. A fresh goroutine starts with a small
// stack that a call grows (schema validation, encoding) and copies every
// time; a reused one keeps its grown stack. Idle goroutines exit after
// poolIdle.
type pool struct {
	work chan func()
}

const poolIdle = 10 * time.Second

func newPool() *pool { return &pool{work: make(chan func())} }

// Go runs fn on an idle goroutine of the pool, or on a new one.
func (p *pool) Go(fn func()) {
	select {
	case p.work <- fn:
	default:
		go p.loop(fn)
	}
}

func (p *pool) loop(fn func()) {
	idle := time.NewTimer(poolIdle)
	defer idle.Stop()
	for {
		fn()
		idle.Reset(poolIdle)
		select {
		case fn = <-p.work:
		case <-idle.C:
			return
		}
	}
}
