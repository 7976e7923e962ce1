package benchmarks

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// delayProxy forwards TCP connections on loopback to a target and holds
// each chunk it reads for a fixed delay d before writing it on, in each
// direction: a round trip through it takes 2d more than a direct one. The
// delay is per chunk, not per connection: each chunk is stamped when it is
// read and written at stamp + d, in order, while later chunks are read
// meanwhile, so pipelined commands on one connection and calls on many
// connections overlap in the delay as they would on a network, instead of
// queueing behind one another.
type delayProxy struct {
	ln     net.Listener
	target string
	d      time.Duration

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// chunk is what one read returned, and when.
type chunk struct {
	at time.Time
	b  []byte
}

// envProxyChild makes the benchmark binary run as a delay proxy process:
// target,delay. The proxy runs apart from the benchmark, so that its
// sleeping writers never hold the benchmark's processors.
const envProxyChild = "THROTTLE_BENCH_DELAY_PROXY"

// proxyProcess is a delayProxy in a child process.
type proxyProcess struct {
	cmd   *exec.Cmd
	stdin io.Closer
	addr  string
}

// Addr is the address clients dial instead of the target's.
func (p *proxyProcess) Addr() string { return p.addr }

// startDelayProxy starts this binary again as a delay proxy to target
// with one-way delay d, listening on 127.0.0.1 only; it is stopped, by its
// pid, when the benchmark ends.
func startDelayProxy(tb testing.TB, target string, d time.Duration) *proxyProcess {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envProxyChild+"="+target+","+d.String())
	cmd.Stderr = os.Stderr
	dieWithParent(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p := &proxyProcess{cmd: cmd, stdin: stdin}
	tb.Cleanup(func() {
		stdin.Close() // the proxy exits at the end of its stdin
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("delay proxy: %v", err)
	}
	p.addr = strings.TrimSpace(line)
	return p
}

// runProxyChild is the proxy process: it prints its address and forwards
// until its stdin ends. Many processors: each writer sleeps in a system
// call, which holds one until the runtime hands it on.
func runProxyChild(v string) {
	runtime.GOMAXPROCS(256)
	target, ds, _ := strings.Cut(v, ",")
	d, err := time.ParseDuration(ds)
	if err != nil {
		fmt.Fprintln(os.Stderr, "delay proxy:", err)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "delay proxy:", err)
		os.Exit(2)
	}
	p := &delayProxy{ln: ln, target: target, d: d, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	fmt.Println(p.ln.Addr().String())
	io.Copy(io.Discard, os.Stdin)
	p.Close()
	os.Exit(0)
}

// Close stops accepting, closes every connection and waits for the
// forwarding goroutines.
func (p *delayProxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

func (p *delayProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *delayProxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		if !p.track(in) || !p.track(out) {
			in.Close()
			out.Close()
			continue
		}
		var done sync.WaitGroup
		done.Add(2)
		p.wg.Add(5)
		go p.forward(in, out, &done)
		go p.forward(out, in, &done)
		go func() {
			defer p.wg.Done()
			done.Wait()
			in.Close()
			out.Close()
			p.mu.Lock()
			delete(p.conns, in)
			delete(p.conns, out)
			p.mu.Unlock()
		}()
	}
}

// forward copies src to dst, each chunk d after it was read, in order: a
// reader goroutine stamps chunks into a queue, and forward, the writer,
// sleeps until each is due.
func (p *delayProxy) forward(src, dst net.Conn, done *sync.WaitGroup) {
	defer p.wg.Done()
	defer done.Done()
	q := make(chan chunk, 4096)
	go func() {
		defer p.wg.Done()
		defer close(q)
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				q <- chunk{at: time.Now(), b: append([]byte(nil), buf[:n]...)}
			}
			if err != nil {
				return
			}
		}
	}()
	failed := false
	for c := range q {
		if failed {
			continue // drain, so the reader never blocks
		}
		if w := time.Until(c.at.Add(p.d)); w > 0 {
			sleepPrecise(w)
		}
		if _, err := dst.Write(c.b); err != nil {
			failed = true
			src.Close()
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok && !failed {
		tc.CloseWrite()
	} else {
		dst.Close()
	}
}

// sleepPrecise sleeps for d in a nanosleep system call, on the calling
// goroutine's thread: the runtime's timers (time.Sleep) round a wait below
// a millisecond up to about a millisecond on an idle process here
// (250 µs slept 1.09 ms), where nanosleep overshoots by 70-100 µs.
func sleepPrecise(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
