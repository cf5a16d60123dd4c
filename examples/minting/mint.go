// Mints an Entitled customer token (JWT HS256) with Go's standard library only.
//
//	ENTITLED_CUSTOMER_TOKEN_SECRET=… go run mint.go USER_ID [SECONDS]
//
// The secret is `customerTokens.secret` of the server's configuration; `sub` is the appUserId (in
// Unicode NFC), `exp` the expiry in seconds, at most `customerTokens.maxLifetimeSeconds` ahead.
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"
)

func mint(secret, appUserID string, lifetime time.Duration) (string, error) {
	enc := base64.RawURLEncoding
	header := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	claims, err := json.Marshal(map[string]any{"sub": appUserID, "exp": time.Now().Add(lifetime).Unix()})
	if err != nil {
		return "", err
	}
	signingInput := header + "." + enc.EncodeToString(claims)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(signingInput))
	return signingInput + "." + enc.EncodeToString(mac.Sum(nil)), nil
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mint USER_ID [SECONDS]")
		os.Exit(2)
	}
	seconds := 3600
	if len(os.Args) > 2 {
		n, err := strconv.Atoi(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, "SECONDS must be a whole number")
			os.Exit(2)
		}
		seconds = n
	}
	token, err := mint(os.Getenv("ENTITLED_CUSTOMER_TOKEN_SECRET"), os.Args[1], time.Duration(seconds)*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(token)
}
