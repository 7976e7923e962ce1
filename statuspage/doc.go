// Package statuspage serves a live page of the limiters of a process, to
// mount as net/http/pprof is: which limit binds, how full each is, who
// waits and for how long, which pause a server asked for and why, the
// recent refusals and settlements, and a chart of each limit's level and
// spending over the last minutes.
//
//	page, err := statuspage.New()
//	if err != nil {
//		return err
//	}
//	defer page.Close()
//	page.Register("openai", lim)
//	http.Handle("/debug/throttle/", page)
//
// The page is opt-in: nothing is sampled and no handler exists until a
// Page is made and mounted. Any throttle.Gate can be registered; what it
// shows comes from the Gate's public capabilities (a throttle.Meter's
// Status, the limits of Limits), so a Limiter, a key's Limiter of a Keyed,
// htb's and redisbucket's limiters all appear. An Auto limiter's learned
// quotas appear through its Stats. The recent events of a limiter are
// those its buckets report to the Page's Observer for it.
//
// It is a package of its own, beside the root and httpthrottle, because it
// needs net/http and embeds a page: the root must not import net/http, and
// a gRPC server or a worker pool that shows its limiters has no use for
// httpthrottle's Transport. Everything it serves is in the binary (no
// script or font from the internet), so it works offline and behind a
// firewall. It shows names, numbers and the causes of pauses (a status, a
// host, a header); credentials never reach it (Auto's keys carry only
// their hash).
//
// Its memory is bounded whatever the run's length: each limit keeps a
// fixed ring of samples (see WithHistory) and each limiter a fixed ring of
// recent events. With thousands of limiters registered (the keys of a
// Keyed), the page shows the most active ones and finds the others by
// name (the q parameter).
package statuspage
