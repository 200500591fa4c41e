package cu

import (
	"runtime"
	"sync"
)

// Thread runs functions on one goroutine locked to its OS thread, in the order they are submitted: the device's
// calling thread, where its context is current. Do waits for its function; Post only queues it, so a caller
// issuing a long run of launches does not pay a round trip between two threads for each (9–35 µs on a
// virtual machine, where waking a thread is slow; see BenchmarkThreadDo and BenchmarkThreadPost).
type Thread struct {
	mu     sync.Mutex // serialises Do, Post and Close; guards closed
	closed bool
	reqs   chan func()
	done   chan doResult
}

// threadQueue is how many posted functions may wait before Post blocks: enough to cover the launches of one
// evaluation of the batched models, few enough that a caller cannot run far ahead of the device.
const threadQueue = 1024

// NewThread starts the thread and runs setup on it (nil: nothing). When setup fails the thread ends and the
// error is returned.
func NewThread(setup func() error) (*Thread, error) {
	t := &Thread{reqs: make(chan func(), threadQueue), done: make(chan doResult, 1)}
	ready := make(chan error)
	go t.loop(setup, ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return t, nil
}

// loop locks the OS thread and never unlocks it, so the runtime retires the thread (and whatever context is
// current on it) when the goroutine ends.
func (t *Thread) loop(setup func() error, ready chan<- error) {
	runtime.LockOSThread()
	if setup != nil {
		if err := setup(); err != nil {
			ready <- err
			return
		}
	}
	ready <- nil
	for f := range t.reqs {
		f()
	}
}

// Do runs f on the thread after every function submitted before it and returns f's error. A panic in f is
// re-raised in the caller. Do must not be called from a function running on the thread (it would deadlock).
func (t *Thread) Do(f func() error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errClosed
	}
	return t.doLocked(f)
}

func (t *Thread) doLocked(f func() error) error {
	t.reqs <- func() { t.done <- run(f) }
	res := <-t.done
	if res.panicked {
		panic(res.panicVal)
	}
	return res.err
}

// Post queues f to run on the thread after every function submitted before it and returns without waiting (it
// blocks only while threadQueue functions are already waiting). f reports nothing back: a caller that needs f's
// outcome keeps it where a later Do reads it. A panic in f ends the program, as in any goroutine. Like Do, Post
// must not be called from a function running on the thread.
func (t *Thread) Post(f func()) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errClosed
	}
	t.reqs <- f
	return nil
}

// Close runs last (nil: nothing) on the thread after every queued function, ends the thread and returns last's
// error. Later Do and Post calls return an error; a second Close does nothing.
func (t *Thread) Close(last func() error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	defer func() { // also when last panics
		t.closed = true
		close(t.reqs)
	}()
	if last == nil {
		last = func() error { return nil }
	}
	return t.doLocked(last)
}

// doResult is what a function run by Do gives back to the caller.
type doResult struct {
	err      error
	panicked bool
	panicVal any
}

// run calls f, catching a panic so that the thread survives it.
func run(f func() error) (res doResult) {
	defer func() {
		if p := recover(); p != nil {
			res = doResult{panicked: true, panicVal: p}
		}
	}()
	return doResult{err: f()}
}
