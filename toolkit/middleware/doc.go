// Package middleware holds ready middlewares for toolkit.Toolkit: logging,
// timeout, rate limit, cache and retry. Each is one file with its test
// beside it.
//
//	tk := toolkit.New(nil)
//	tk.Use(
//		middleware.Logging(slog.Default()),                          // outermost: sees every outcome
//		middleware.RateLimit{Rate: 5, Burst: 10}.Middleware(),       // per session
//		middleware.Cache{TTL: time.Minute}.Middleware(),             // read-only tools only
//		middleware.Retry{MaxAttempts: 3}.Middleware(),               // retryable tools only
//		middleware.Timeout{Default: 30 * time.Second}.Middleware(),  // innermost: per attempt
//	)
//	err := tk.Add(toolkit.Func("weather", "Current weather.", weather), toolkit.ReadOnly())
//
// # Order
//
// The first middleware given to Use is the outermost. The order above is
// the one to start from: logging outside everything, so it records what
// the caller gets (a refusal by the rate limiter or a cache hit included);
// the rate limiter before the cache, so cache hits are counted against the
// limit like any call; the cache outside retry, so a retried success is
// cached once; the timeout innermost, so each retry attempt gets its own
// deadline (put it outside Retry to bound the whole call instead).
//
// # Contracts
//
// Knobs are documented structs whose zero values mean something (zero Rate
// is no limit, zero TTL is no expiry, ...); simple middlewares are
// constructors. Every middleware is safe for concurrent calls, and the
// state of a stateful one (rate-limit buckets, cache entries) belongs to
// the toolkit.Middleware value its Middleware method returns: call
// Middleware once and share the result.
//
// State is bounded in memory. The cache counts entries and bytes, keys
// included (Cache.MaxEntries, Cache.MaxBytes: 64 MiB by default, one
// default MaxResultBytes), evicting the least recently used until both
// hold; an answer larger than MaxBytes is not cached, and the misses in
// flight together record at most MaxBytes more: past it, a miss stops
// recording and its answer is not cached.
//
// Refusals are results, not Go errors: a rate-limited call ends with code
// overloaded and RetryAfter (the final response's metadata carries
// retry_after_ms), a timed-out call with code timeout.
//
// Deadlines are cooperative, like all cancellation in toolbus: the
// timeout middleware cancels the call's context; a tool that ignores its
// context keeps running until it returns, and only then does the caller
// get its final response (with code timeout).
package middleware
