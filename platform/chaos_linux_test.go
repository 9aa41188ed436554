package platform

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation/testfoundation"
)

// TestChaosOnTheLocalFoundation: the local foundation links its chaos API; a crash
// through it names the instance it hit, which runs again as a new instance; an
// instance restarted through the CC API (RestartInstance) does likewise; and a crash of
// an app that does not exist is refused with the API's error.
func TestChaosOnTheLocalFoundation(t *testing.T) {
	t.Parallel()
	_, cl := testfoundation.Start(t)
	c := New(cl)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if !c.ChaosSupported(ctx) {
		t.Fatal("the local foundation has no chaos API")
	}
	app := testfoundation.PushStub(t, cl, testfoundation.StubZip(t), "apps", "victim", 2)
	a, err := c.FindApp(ctx, spaceGUID(t, c, "apps"), "victim")
	if err != nil || a == nil || a.GUID != app {
		t.Fatalf("find the app: %+v, %v", a, err)
	}
	if err := c.WaitRunning(ctx, a.ProcessGUID, 2, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	guidOf := func(index int) string {
		t.Helper()
		stats, err := c.InstanceStats(ctx, a.ProcessGUID)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range stats {
			if s.Index == index && s.State == "RUNNING" {
				return s.GUID
			}
		}
		return ""
	}
	// runsAgain waits until instance index runs as another instance than old.
	runsAgain := func(index int, old string) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
			if g := guidOf(index); g != "" && g != old {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("instance %d does not run again a minute after its fault", index)
			}
		}
	}

	before := guidOf(1)
	res, err := c.Chaos(ctx, ChaosRequest{Action: "crash", AppGUID: app, ProcessType: "web", Index: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != "crash" || res.At.IsZero() || len(res.Instances) != 1 || res.Instances[0].InstanceGUID != before || res.Instances[0].Index != 1 || res.Instances[0].AppGUID != app {
		t.Errorf("crash answered %+v, want instance 1 (%s) of %s", res, before, app)
	}
	runsAgain(1, before)

	before = guidOf(0)
	if err := c.RestartInstance(ctx, app, "", 0); err != nil {
		t.Fatal(err)
	}
	runsAgain(0, before)

	if _, err := c.Chaos(ctx, ChaosRequest{Action: "crash", AppGUID: "no-such-app"}); err == nil || !strings.Contains(err.Error(), "chaos crash") {
		t.Errorf("a crash of no app: %v, want the API's refusal", err)
	}
}
