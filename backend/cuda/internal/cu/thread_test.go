package cu

import (
	"errors"
	"sync"
	"testing"
)

// Posted and waited-for functions from several goroutines run one at a time, each goroutine's in its own order,
// and a Do sees everything its caller posted before it. Run with -race: the counters are unsynchronised and only
// the thread touches them.
func TestThreadOrder(t *testing.T) {
	th, err := NewThread(nil)
	if err != nil {
		t.Fatal(err)
	}
	const workers, posts = 4, 2000
	last := make([]int, workers) // thread only
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= posts; i++ {
				if err := th.Post(func() {
					if last[w] != i-1 {
						panic("posted functions out of order")
					}
					last[w] = i
				}); err != nil {
					t.Error(err)
					return
				}
				if i%500 == 0 {
					var seen int
					if err := th.Do(func() error { seen = last[w]; return nil }); err != nil {
						t.Error(err)
						return
					}
					if seen != i {
						t.Errorf("worker %d: Do after post %d saw %d", w, i, seen)
					}
				}
			}
		}()
	}
	wg.Wait()
	var got []int
	if err := th.Close(func() error { got = append([]int(nil), last...); return nil }); err != nil {
		t.Fatal(err)
	}
	for w, n := range got {
		if n != posts {
			t.Errorf("worker %d: %d of %d posted functions ran before Close's", w, n, posts)
		}
	}
}

func TestThreadSetupErrorPanicAndClose(t *testing.T) {
	want := errors.New("setup failed")
	if _, err := NewThread(func() error { return want }); err != want {
		t.Errorf("NewThread with a failing setup: %v, want its error", err)
	}
	th, err := NewThread(nil)
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("recovered %v, want the panic of f", p)
			}
		}()
		th.Do(func() error { panic("boom") })
	}()
	ran := false
	if err := th.Post(func() { ran = true }); err != nil {
		t.Fatal(err)
	}
	if err := th.Close(nil); err != nil || !ran {
		t.Fatalf("Close: %v; posted function ran: %v", err, ran)
	}
	if err := th.Close(nil); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := th.Do(func() error { return nil }); !errors.Is(err, errClosed) {
		t.Errorf("Do after Close: %v", err)
	}
	if err := th.Post(func() {}); !errors.Is(err, errClosed) {
		t.Errorf("Post after Close: %v", err)
	}
}

// The cost of handing one function to the thread: Do waits for it (two thread wake-ups), Post does not.
func BenchmarkThreadDo(b *testing.B) {
	th, err := NewThread(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer th.Close(nil)
	n := 0
	for i := 0; i < b.N; i++ {
		_ = th.Do(func() error { n++; return nil })
	}
}

func BenchmarkThreadPost(b *testing.B) {
	th, err := NewThread(nil)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for i := 0; i < b.N; i++ {
		_ = th.Post(func() { n++ })
	}
	_ = th.Close(nil) // waits for the queue, so the time covers running every function
}
