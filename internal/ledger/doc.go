// Package ledger is what an HTTP client keeps of its calls on a Gate
// between the permit and the answer, on the Gate's public capabilities
// only: what the calls in flight reserved and have not settled (Flights),
// the bursts from a full bucket not yet answered (Bursts), the restores
// due at the end of a server's window (Resets), the calls refused without
// a usable wait and the pauses made for them (Refusals), and the exact
// arithmetic of refills that a decision on a deadline rests on
// (RefillTime).
//
// # Bursts from a full bucket
//
// A server's quota that is full does not refill: it stays full until the
// server sees the calls taken from it. A client's bucket emptied by the
// same calls refilled from the instant it admitted them. By the time the
// server counts them (a connection, a request body, a scheduler later)
// the client has counted a refill the server never had, and the next
// call, admitted on it, is refused. An exact remaining count corrects the
// level once it arrives; a rounded one cannot, and neither corrects a call
// admitted before any answer came.
//
// So a call taken from a bucket at its capacity opens a burst, and every
// call taken from that bucket until the server answers one of them joins
// it. The first answer (the server has counted that call, so its quota
// has left its capacity) lowers the bucket to its capacity less what the
// burst reserved, into debt if need be: the refill counted before it
// goes. A call of the burst admitted on that refill (the burst's
// reservations past the capacity) is not sent before that answer, and
// then only after the refill of its excess. The answer bounds from above
// the instant the server left its capacity, so the client never counts a
// token the server has not had; for a long call that costs the refill of
// its duration once, at the start of a burst after an idle spell.
package ledger
