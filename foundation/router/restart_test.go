package router

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// getOn sends GET / for host on conn (kept alive) and returns the status.
func getOn(t *testing.T, conn net.Conn, br *bufio.Reader, host string) int {
	t.Helper()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	defer conn.SetDeadline(time.Time{})
	req, _ := http.NewRequest("GET", "http://"+host+"/", nil)
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// TestRestartClosesIdleConnections: after the drain wait the listener and idle
// keep-alive connections close (a client reusing one reads EOF), a request in flight
// finishes, and the router serves again on the same address; during the drain wait it
// serves, and Close then ends the restart.
func TestRestartClosesIdleConnections(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		io.WriteString(w, "done")
	}))
	t.Cleanup(slow.Close)
	table := newTable(map[string]Route{
		"app.local":  {AppGUID: appGUID, Backends: []Backend{{Addr: startEcho(t, "a")}}},
		"slow.local": {AppGUID: otherGUID, Backends: []Backend{{Addr: slow.Listener.Addr().String()}}},
	})
	rt, _ := startRouter(t, table, nil)
	addr := rt.Addr()
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	br := bufio.NewReader(idle)
	if code := getOn(t, idle, br, "app.local"); code != 200 {
		t.Fatalf("before the restart: %d", code)
	}
	slowReq := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
		req.Host = "slow.local"
		res, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
		if err != nil {
			slowReq <- 0
			return
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		slowReq <- res.StatusCode
	}()
	<-entered

	done, err := rt.Restart(10 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// The idle connection is closed at once after the drain wait, while the slow
	// request still holds the old server.
	idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := br.ReadByte(); err == nil || isTimeout(err) {
		t.Fatalf("idle keep-alive connection after the drain wait: read %d, %v; want EOF or a reset", n, err)
	}
	select {
	case <-done:
		t.Fatal("restarted before the request in flight finished")
	default:
	}
	close(release)
	if code := <-slowReq; code != 200 {
		t.Errorf("the request in flight during the restart: %d", code)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the router did not come back")
	}
	if rt.Addr() != addr {
		t.Errorf("restarted on %s, was %s", rt.Addr(), addr)
	}
	if res, _ := do(t, rt, "GET", "app.local", "/", nil, ""); res.StatusCode != 200 {
		t.Errorf("after the restart: %d", res.StatusCode)
	}

	// Draining, the router serves; Close then ends the restart and the router.
	done, err = rt.Restart(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Restart(0); !errors.Is(err, ErrRestarting) {
		t.Errorf("a second restart while one is under way: %v, want ErrRestarting", err)
	}
	if res, _ := do(t, rt, "GET", "app.local", "/", nil, ""); res.StatusCode != 200 {
		t.Errorf("while draining: %d", res.StatusCode)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	<-done
	if _, err := rt.Restart(0); !errors.Is(err, ErrClosed) {
		t.Errorf("Restart after Close: %v, want ErrClosed", err)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Error("the closed router still accepts connections")
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
