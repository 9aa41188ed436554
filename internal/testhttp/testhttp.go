// Package testhttp gives tests an HTTP client of their own.
//
// httptest.Server.Close closes the idle connections of http.DefaultTransport, and a
// request of another test that has just taken one of them fails with "http:
// CloseIdleConnections called" (it is not retried). Tests run in parallel, and many
// close a server of their own while others make requests: they use Client, never
// http.DefaultClient, http.Get or http.Post (make lint refuses those in tests).
package testhttp

import "net/http"

// Client is http.DefaultClient with a transport of its own.
var Client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
