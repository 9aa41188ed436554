package report

import "testing"

// CheckInChromium renders rep in a fresh headless Chromium and checks the page as
// TestHTMLInChromium does, for tests of package report_test that build reports of real
// runs; there two series may coincide, so each chart must show at least one, not all.
func CheckInChromium(t *testing.T, rep *Report, name string) {
	newBrowser(t).check(t, rep, name, false)
}
