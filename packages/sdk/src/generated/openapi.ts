// Generated from @partner-lending/spec (spec/openapi.yaml) by `pnpm generate` with openapi-typescript. Do not edit.

export interface paths {
    "/oauth/token": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Exchange client credentials for an access token
         * @description Partner Lending API — Authentication and Access §4.1 and §5. The client credentials grant of RFC 6749 §4.4. The partner sends its
         *     `client_id` and `client_secret` (from the partner administration console) and receives a
         *     time-limited bearer token (a JWT) for the audience `{base_url}`.
         *
         *     Rules (API documentation §4.1):
         *     1. With valid client credentials the answer holds a token whose scope is the **intersection**
         *        of the requested scopes and the scopes the partner is authorised for.
         *     2. A requested scope that is not authorised for the partner is absent from the returned
         *        `scope` field.
         *
         *     Refreshing a token means requesting a new one the same way (API documentation §5.4). Errors are
         *     not specified by the API documentation (§7); this description gives the error object of RFC 6749
         *     §5.2, which an OAuth 2.0 authorisation server returns, and `invalid_target` (RFC 8707 §2), which
         *     authorisation servers return for an audience or resource they do not issue tokens for.
         */
        post: operations["requestToken"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v3/partner/{partner_id}/loans": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The partner identifier: the `partnerId` of the token response (API documentation §4.2), shown in the partner
                 *     administration console under Account > Profile. A token may only be used on its own partner's
                 *     paths (partner isolation).
                 * @example partner-7f3a
                 */
                partner_id: components["parameters"]["PartnerId"];
            };
            cookie?: never;
        };
        /**
         * List the partner's loans
         * @description Partner Lending API — Authentication and Access §4.2. Requires the `read:loans` scope. Accepts
         *     `limit` and `offset` for paging.
         *
         *     The API documentation does not specify the fields of a loan, the response shape, nor the type, default or
         *     bounds of `limit` and `offset`. This document models them openly: the body is a JSON array of
         *     loan objects or a JSON object (for example a page with an array of items), every object open to
         *     any property. `limit` and `offset` are modelled as integers (`limit` ≥ 1, `offset` ≥ 0); their
         *     defaults and upper bounds are not specified by the API documentation.
         */
        get: operations["listLoans"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v3/partner/{partner_id}/loan_draft": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The partner identifier: the `partnerId` of the token response (API documentation §4.2), shown in the partner
                 *     administration console under Account > Profile. A token may only be used on its own partner's
                 *     paths (partner isolation).
                 * @example partner-7f3a
                 */
                partner_id: components["parameters"]["PartnerId"];
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Create a loan draft
         * @description Partner Lending API — Authentication and Access §4.2. Requires the `create:loan_draft` scope. The
         *     method is not specified by the API documentation; POST is the method the public documentation
         *     of the deployed service uses. The request and response bodies are not specified by the API
         *     documentation: any JSON object is accepted and returned.
         */
        post: operations["createLoanDraft"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v3/partner/{partner_id}/journals": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The partner identifier: the `partnerId` of the token response (API documentation §4.2), shown in the partner
                 *     administration console under Account > Profile. A token may only be used on its own partner's
                 *     paths (partner isolation).
                 * @example partner-7f3a
                 */
                partner_id: components["parameters"]["PartnerId"];
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Create a journal update
         * @description Partner Lending API — Authentication and Access §4.2. Requires the `create:journal_update` scope. The
         *     method is not specified by the API documentation; POST is the method the public documentation
         *     of the deployed service uses. The request and response bodies are not specified by the API
         *     documentation: any JSON object is accepted and returned.
         */
        post: operations["createJournalUpdate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v3/partner/{partner_id}/repayments": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The partner identifier: the `partnerId` of the token response (API documentation §4.2), shown in the partner
                 *     administration console under Account > Profile. A token may only be used on its own partner's
                 *     paths (partner isolation).
                 * @example partner-7f3a
                 */
                partner_id: components["parameters"]["PartnerId"];
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Create a repayment
         * @description Partner Lending API — Authentication and Access §4.2. Requires the `create:repayment` scope. The
         *     method is not specified by the API documentation; POST is the method the public documentation
         *     of the deployed service uses. The request and response bodies are not specified by the API
         *     documentation: any JSON object is accepted and returned.
         */
        post: operations["createRepayment"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** @description Form fields of the token request (API documentation §2.1), sent as `application/x-www-form-urlencoded`. */
        TokenRequest: {
            /**
             * @description Always `client_credentials`.
             * @constant
             */
            grant_type: "client_credentials";
            /**
             * @description Space-separated list of requested scopes; allowed values are `read:loans`,
             *     `create:loan_draft`, `create:journal_update`, `create:repayment`. Not stated as required by
             *     the API documentation. The granted scope is the intersection of these and the scopes the
             *     partner is authorised for (API documentation §4.1).
             * @example read:loans create:loan_draft
             */
            scope?: string;
            /**
             * Format: uri
             * @description The API the token will be used with: the base address of the partner API of the
             *     environment, `{base_url}` (API documentation §2.1, §5.3). Whether it is required is not
             *     specified by the API documentation.
             * @example https://partner-api.staging.invalid
             */
            audience?: string;
            /**
             * @description First half of the client credentials; identifies the partner. Secret. The API documentation
             *     marks it required in the form; RFC 6749 §2.3.1 also allows HTTP Basic client authentication.
             */
            client_id: string;
            /**
             * Format: password
             * @description Second half of the client credentials. Secret (API documentation §5.6).
             */
            client_secret: string;
        };
        /** @description The token response (API documentation §2.2). */
        TokenResponse: {
            /** @description The bearer token (a JWT) to send as `Authorization: Bearer <ACCESS_TOKEN>`. */
            access_token: string;
            /**
             * @description Always a bearer token. The deployed service answers lowercase `bearer`; compare
             *     case-insensitively (RFC 6749 §5.1).
             * @example bearer
             */
            token_type: string;
            /**
             * @description Seconds the token is valid. The JWT also carries an expiry claim (`exp`) that can be
             *     checked; the deployed service answers one second less than the JWT lifetime (43199 for
             *     12 hours).
             * @example 43199
             */
            expires_in: number;
            /**
             * @description Space-separated granted scopes: the intersection of the requested scopes and the scopes the
             *     partner is authorised for (API documentation §4.1). Inside the JWT the `scope` claim may be an array
             *     of strings (deployed service) or a space-separated string (RFC 9068).
             * @example read:loans create:loan_draft
             */
            scope: string;
            /**
             * Format: uri
             * @description Issuer of the JWT. The deployed service's ends with a slash.
             */
            iss: string;
            /**
             * @description Identifier of the partner, the `partner_id` of the v3 paths. Shown in the partner
             *     administration console under Account > Profile.
             */
            partnerId: string;
            /** @description Unique identifier of the token. */
            jti: string;
        };
        /** @description Error object of RFC 6749 §5.2. */
        OAuthError: {
            /** @enum {string} */
            error: "invalid_request" | "invalid_client" | "invalid_grant" | "unauthorized_client" | "unsupported_grant_type" | "invalid_scope" | "access_denied" | "invalid_target";
            /** @description Human-readable text for the developer. */
            error_description?: string;
            /** Format: uri */
            error_uri?: string;
        };
        /**
         * @description Error body of the partner API. Not specified by the API documentation (§7); modelled as an object
         *     with optional RFC 6750 style `error` and `error_description`, open to other properties.
         */
        ApiError: {
            error?: string;
            error_description?: string;
        } & {
            [key: string]: unknown;
        };
        /** @description A JSON object whose fields are not specified by the API documentation; any property is allowed. */
        OpenObject: {
            [key: string]: unknown;
        };
        /** @description A loan. Its fields are not specified by the API documentation (§2.3); any property is allowed. */
        Loan: {
            [key: string]: unknown;
        };
        /**
         * @description A page of loans. The shape is not specified by the API documentation: either an array of loans, or an
         *     object (for example one holding an array of loans) open to any property.
         */
        LoansPage: components["schemas"]["Loan"][] | {
            [key: string]: unknown;
        };
    };
    responses: {
        /** @description Accepted and stored. The response body is not specified by the API documentation; it is a JSON object. */
        Created: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["OpenObject"];
            };
        };
        /**
         * @description The request is malformed: a bad `limit` or `offset`, a body that is not a JSON object, or
         *     malformed JSON. Error bodies are not specified by the API documentation (§7).
         */
        BadRequest: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ApiError"];
            };
        };
        /**
         * @description No token, or a token that is invalid, expired, not meant for this audience or not signed by
         *     the authentication service (RFC 6750 §3.1 `invalid_token`). Without credentials the challenge
         *     carries no `error` attribute (RFC 6750 §3.1). The API documentation does not specify error statuses or bodies (§7).
         */
        Unauthorized: {
            headers: {
                "WWW-Authenticate": components["headers"]["BearerChallenge"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ApiError"];
            };
        };
        /**
         * @description The token lacks the scope this operation requires (RFC 6750 §3.1 `insufficient_scope`, with the
         *     required scope in the challenge's `scope` attribute), or the token belongs to another partner
         *     than the `partner_id` of the path (partner isolation: a token is only good for its own
         *     partner's paths).
         */
        Forbidden: {
            headers: {
                "WWW-Authenticate": components["headers"]["BearerChallenge"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ApiError"];
            };
        };
        /**
         * @description No such resource. A server may also answer 404 instead of 403 for another partner's path, so as
         *     not to reveal that the partner exists.
         */
        NotFound: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ApiError"];
            };
        };
        /** @description The request body is larger than the server accepts (no limit is specified by the API documentation, §8). */
        PayloadTooLarge: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ApiError"];
            };
        };
        /**
         * @description RFC 6749 §5.2: `invalid_request`, `invalid_grant`, `unsupported_grant_type`, `invalid_scope`;
         *     RFC 8707 §2: `invalid_target`, returned by authorisation servers for an `audience` (resource)
         *     they do not issue tokens for. Not specified by the API documentation (§7).
         */
        TokenError400: {
            headers: {
                "Cache-Control": components["headers"]["NoStore"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["OAuthError"];
            };
        };
        /**
         * @description RFC 6749 §5.2 `invalid_client`: client authentication failed (unknown client, wrong secret).
         *     Not specified by the API documentation (§7).
         */
        TokenError401: {
            headers: {
                "Cache-Control": components["headers"]["NoStore"];
                /** @description Present when the client authenticated with HTTP Basic (RFC 6749 §5.2). */
                "WWW-Authenticate"?: string;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["OAuthError"];
            };
        };
        /**
         * @description The request was understood but refused, for example a token asked for an audience other than
         *     the partner API (`access_denied`, as the deployed service answers). Not specified by the API
         *     documentation (§7).
         */
        TokenError403: {
            headers: {
                "Cache-Control": components["headers"]["NoStore"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["OAuthError"];
            };
        };
    };
    parameters: {
        /**
         * @description The partner identifier: the `partnerId` of the token response (API documentation §4.2), shown in the partner
         *     administration console under Account > Profile. A token may only be used on its own partner's
         *     paths (partner isolation).
         * @example partner-7f3a
         */
        PartnerId: string;
    };
    requestBodies: {
        /**
         * @description A JSON object. Its fields are not specified by the API documentation (§2.3), so any property
         *     is accepted.
         */
        OpenObject: {
            content: {
                "application/json": components["schemas"]["OpenObject"];
            };
        };
    };
    headers: {
        /** @description `no-store` (RFC 6749 §5.1). */
        NoStore: string;
        /**
         * @description An RFC 6750 §3 challenge, for example `Bearer realm="partner-api"`,
         *     `Bearer error="invalid_token", error_description="the access token expired"` or
         *     `Bearer error="insufficient_scope", scope="read:loans"`.
         */
        BearerChallenge: string;
    };
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    requestToken: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/x-www-form-urlencoded": components["schemas"]["TokenRequest"];
            };
        };
        responses: {
            /**
             * @description A token was issued (RFC 6749 §5.1). Its `scope` is the intersection of the requested and
             *     the authorised scopes.
             */
            200: {
                headers: {
                    /** @description `no-store`: token answers must not be cached (RFC 6749 §5.1). */
                    "Cache-Control"?: "no-store";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TokenResponse"];
                };
            };
            400: components["responses"]["TokenError400"];
            401: components["responses"]["TokenError401"];
            403: components["responses"]["TokenError403"];
        };
    };
    listLoans: {
        parameters: {
            query?: {
                /**
                 * @description Largest number of loans to return. Modelled as an integer ≥ 1; the default and the upper
                 *     bound are not specified by the API documentation, so this document sets no `maximum`: a
                 *     server may bound `limit`, answering a larger value 400 `invalid_request`. The toolkit's mock
                 *     refuses values over 100 (its default is 20): that bound is the mock's choice, not the API's,
                 *     and is stated here as `x-mock-maximum` so that a generator of requests from this document
                 *     knows it.
                 * @example 50
                 */
                limit?: number;
                /**
                 * @description Number of loans to skip. Modelled as an integer ≥ 0; the default (presumably 0) is not
                 *     specified by the API documentation.
                 * @example 0
                 */
                offset?: number;
            };
            header?: never;
            path: {
                /**
                 * @description The partner identifier: the `partnerId` of the token response (API documentation §4.2), shown in the partner
                 *     administration console under Account > Profile. A token may only be used on its own partner's
                 *     paths (partner isolation).
                 * @example partner-7f3a
                 */
                partner_id: components["parameters"]["PartnerId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The loans (shape not specified by the API documentation; see the operation description). */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LoansPage"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
        };
    };
    createLoanDraft: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The partner identifier: the `partnerId` of the token response (API documentation §4.2), shown in the partner
                 *     administration console under Account > Profile. A token may only be used on its own partner's
                 *     paths (partner isolation).
                 * @example partner-7f3a
                 */
                partner_id: components["parameters"]["PartnerId"];
            };
            cookie?: never;
        };
        requestBody: components["requestBodies"]["OpenObject"];
        responses: {
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            413: components["responses"]["PayloadTooLarge"];
            "2XX": components["responses"]["Created"];
        };
    };
    createJournalUpdate: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The partner identifier: the `partnerId` of the token response (API documentation §4.2), shown in the partner
                 *     administration console under Account > Profile. A token may only be used on its own partner's
                 *     paths (partner isolation).
                 * @example partner-7f3a
                 */
                partner_id: components["parameters"]["PartnerId"];
            };
            cookie?: never;
        };
        requestBody: components["requestBodies"]["OpenObject"];
        responses: {
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            413: components["responses"]["PayloadTooLarge"];
            "2XX": components["responses"]["Created"];
        };
    };
    createRepayment: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The partner identifier: the `partnerId` of the token response (API documentation §4.2), shown in the partner
                 *     administration console under Account > Profile. A token may only be used on its own partner's
                 *     paths (partner isolation).
                 * @example partner-7f3a
                 */
                partner_id: components["parameters"]["PartnerId"];
            };
            cookie?: never;
        };
        requestBody: components["requestBodies"]["OpenObject"];
        responses: {
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            413: components["responses"]["PayloadTooLarge"];
            "2XX": components["responses"]["Created"];
        };
    };
}
