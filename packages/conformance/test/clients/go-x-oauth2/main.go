// A partner journey on golang.org/x/oauth2/clientcredentials at its defaults: the token source renews
// 10 s before expiry (the library's expiryDelta) and serialises renewals behind its mutex; client
// authentication is auto-detected (HTTP Basic first). It asks for the scopes its client is authorised
// for (PARTNER_SCOPES, as the partner console says), reads the granted scope of each token answer
// (token.Extra("scope"), RFC 6749 §5.1) and, before an operation its token lacks, builds a new token
// source: a new token asked for, never the operation called with a token lacking its scope. It lists
// loans and makes each authorised create until it succeeded once (a create answered 503 is never
// re-sent: the next round makes a new one). TOKEN_PER_CALL=1 builds a new token source for every call
// (the classic mistake): a token request per call.
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

var (
	config = clientcredentials.Config{
		ClientID:       os.Getenv("PARTNER_CLIENT_ID"),
		ClientSecret:   os.Getenv("PARTNER_CLIENT_SECRET"),
		TokenURL:       os.Getenv("PARTNER_TOKEN_URL"),
		Scopes:         strings.Fields(scopesOr(os.Getenv("PARTNER_SCOPES"), "read:loans create:loan_draft")),
		EndpointParams: url.Values{"audience": {os.Getenv("PARTNER_AUDIENCE")}},
	}
	perCall   = os.Getenv("TOKEN_PER_CALL") == "1"
	mu        sync.Mutex
	source    oauth2.TokenSource
	notBefore time.Time
)

func scopesOr(value, fallback string) string {
	if strings.TrimSpace(value) == "" {
		return fallback
	}
	return value
}

func contains(list []string, scope string) bool {
	for _, item := range list {
		if item == scope {
			return true
		}
	}
	return false
}

// granted says whether the token answer granted scope: its "scope" field, or, when absent, what was
// asked (RFC 6749 §5.1).
func granted(t *oauth2.Token, scope string) bool {
	field, _ := t.Extra("scope").(string)
	if field == "" {
		return contains(config.Scopes, scope)
	}
	return contains(strings.Fields(field), scope)
}

// token hands out the source's token for an operation needing scope; replacing the source (after a 401,
// or when its token lacks the scope: a new token is asked for once) and asking it happen under one lock,
// so that a replaced source never runs a token request beside its successor.
func token(scope string) (*oauth2.Token, oauth2.TokenSource, error) {
	mu.Lock()
	defer mu.Unlock()
	if perCall || source == nil {
		source = config.TokenSource(context.Background())
	}
	t, err := source.Token()
	if err == nil && !granted(t, scope) {
		source = config.TokenSource(context.Background())
		t, err = source.Token()
	}
	if err == nil && !granted(t, scope) {
		return nil, source, fmt.Errorf("not granted %s (granted %v)", scope, t.Extra("scope"))
	}
	return t, source, err
}

// refused drops the token source after a 401: the next call gets a new token.
func refused(old oauth2.TokenSource) {
	mu.Lock()
	defer mu.Unlock()
	if source == old {
		source = nil
	}
}

func waitRetryAfter(response *http.Response) {
	seconds, err := strconv.Atoi(response.Header.Get("Retry-After"))
	if err != nil {
		seconds = 1
	}
	mu.Lock()
	until := time.Now().Add(time.Duration(seconds) * time.Second)
	if until.After(notBefore) {
		notBefore = until
	}
	mu.Unlock()
}

func call(method, path, scope string, body []byte) int {
	for attempt := 1; attempt <= 3; attempt++ {
		mu.Lock()
		wait := time.Until(notBefore)
		mu.Unlock()
		if wait > 0 {
			time.Sleep(wait)
		}
		token, ts, err := token(scope)
		if err != nil {
			// Not granted now: the operation is not called; a later round asks again.
			fmt.Fprintln(os.Stderr, "token:", err)
			return 0
		}
		partner, _ := token.Extra("partnerId").(string)
		request, _ := http.NewRequest(method, os.Getenv("PARTNER_BASE_URL")+"/v3/partner/"+partner+"/"+path, bytes.NewReader(body))
		if body != nil {
			request.Header.Set("Content-Type", "application/json")
		}
		token.SetAuthHeader(request)
		response, err := http.DefaultClient.Do(request)
		if err != nil {
			fmt.Fprintln(os.Stderr, "call:", err)
			os.Exit(1)
		}
		io.Copy(io.Discard, response.Body)
		response.Body.Close()
		switch {
		case response.StatusCode == 401 && attempt == 1:
			refused(ts)
			continue
		case response.StatusCode == 429 || response.StatusCode == 503:
			waitRetryAfter(response)
			if method == "POST" {
				return response.StatusCode // a create is never sent twice
			}
			continue
		}
		return response.StatusCode
	}
	return 0
}

func main() {
	seconds, _ := strconv.Atoi(os.Getenv("JOURNEY_SECONDS"))
	end := time.Now().Add(time.Duration(seconds) * time.Second)
	calls := 0
	// The creates its client is authorised for, each made until it succeeded once.
	type create struct{ path, scope string }
	var pending []create
	for _, item := range []create{{"loan_draft", "create:loan_draft"}, {"journals", "create:journal_update"}, {"repayments", "create:repayment"}} {
		if contains(config.Scopes, item.scope) {
			pending = append(pending, item)
		}
	}
	for i := 0; time.Now().Before(end); i++ {
		var group sync.WaitGroup
		for _, offset := range []int{0, 10} {
			group.Add(1)
			go func(offset int) {
				defer group.Done()
				call("GET", "loans?limit=10&offset="+strconv.Itoa(offset), "read:loans", nil)
			}(offset)
		}
		group.Wait()
		calls += 2
		if i%2 == 1 {
			var left []create
			for _, item := range pending {
				status := call("POST", item.path, item.scope, []byte(fmt.Sprintf(`{"amount":%d,"currency":"EUR"}`, 1000+i)))
				calls++
				if status < 200 || status >= 300 {
					left = append(left, item)
				}
			}
			pending = left
		}
		time.Sleep(300 * time.Millisecond)
	}
	fmt.Printf("go x/oauth2 journey: %d calls, %d creates never succeeded\n", calls, len(pending))
}
