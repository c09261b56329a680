// A partner journey on golang.org/x/oauth2/clientcredentials at its defaults: the token source renews
// 10 s before expiry (the library's expiryDelta) and serialises renewals behind its mutex; client
// authentication is auto-detected (HTTP Basic first). TOKEN_PER_CALL=1 builds a new token source for
// every call (the classic mistake): a token request per call.
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
		Scopes:         []string{"read:loans", "create:loan_draft"},
		EndpointParams: url.Values{"audience": {os.Getenv("PARTNER_AUDIENCE")}},
	}
	perCall   = os.Getenv("TOKEN_PER_CALL") == "1"
	mu        sync.Mutex
	source    oauth2.TokenSource
	notBefore time.Time
)

// token hands out the source's token; replacing the source (after a 401) and asking it happen under one
// lock, so that a replaced source never runs a token request beside its successor.
func token() (*oauth2.Token, oauth2.TokenSource, error) {
	mu.Lock()
	defer mu.Unlock()
	if perCall || source == nil {
		source = config.TokenSource(context.Background())
	}
	t, err := source.Token()
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

func call(method, path string, body []byte) int {
	for attempt := 1; attempt <= 3; attempt++ {
		mu.Lock()
		wait := time.Until(notBefore)
		mu.Unlock()
		if wait > 0 {
			time.Sleep(wait)
		}
		token, ts, err := token()
		if err != nil {
			fmt.Fprintln(os.Stderr, "token:", err)
			os.Exit(1)
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
	for i := 0; time.Now().Before(end); i++ {
		var group sync.WaitGroup
		for _, offset := range []int{0, 10} {
			group.Add(1)
			go func(offset int) {
				defer group.Done()
				call("GET", "loans?limit=10&offset="+strconv.Itoa(offset), nil)
			}(offset)
		}
		group.Wait()
		calls += 2
		if i%8 == 1 {
			call("POST", "loan_draft", []byte(fmt.Sprintf(`{"amount":%d,"currency":"EUR"}`, 1000+i)))
			calls++
		}
		time.Sleep(300 * time.Millisecond)
	}
	fmt.Printf("go x/oauth2 journey: %d calls\n", calls)
}
