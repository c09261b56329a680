// A partner journey on Java 17's standard HTTP client (java.net.http), run with the source launcher
// (`java JavaJourney.java`). Tokens are renewed WINDOW seconds before they expire (default 0: at expiry),
// one renewal at a time behind a lock that re-checks the cache (callers that waited use the token it
// brought), client credentials as form fields, a new token and one retry on 401, Retry-After honoured
// for every call. It asks for the scopes its client is authorised for (PARTNER_SCOPES, as the partner
// console says), reads the granted scope of each token answer (RFC 6749 §5.1: absent, it is what was
// asked) and, before an operation its token lacks, fetches a new token under the same lock: never the
// operation called with a token lacking its scope. It lists loans and makes each authorised create until
// it succeeded once (a create answered 503 is never re-sent: a later round makes a new one).
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public class JavaJourney {
  static final HttpClient http = HttpClient.newHttpClient();
  static final long windowMs = Long.parseLong(System.getenv().getOrDefault("WINDOW", "0")) * 1000;
  static final Object lock = new Object();
  static final String authorised =
      System.getenv().getOrDefault("PARTNER_SCOPES", "").isBlank() ? "read:loans create:loan_draft" : System.getenv("PARTNER_SCOPES");
  static String token;
  static String partnerId;
  static String grantedScope;
  static long expiresAt;
  static volatile long notBefore;

  static String field(String json, String name) {
    Matcher m = Pattern.compile("\"" + name + "\"\\s*:\\s*\"?([^\",}]*)").matcher(json);
    return m.find() ? m.group(1) : null;
  }

  static String enc(String value) {
    return URLEncoder.encode(value, StandardCharsets.UTF_8);
  }

  static boolean granted(String scope) {
    return (" " + grantedScope + " ").contains(" " + scope + " ");
  }

  /**
   * The cached token, or a new one; `refused` is the token the API just refused (dropped if still cached);
   * a token lacking `scope` is replaced once. Null when the new one lacks it too (not granted now).
   */
  static String[] token(String refused, String scope) throws Exception {
    synchronized (lock) {
      if (refused != null && refused.equals(token)) token = null;
      if (token != null && !granted(scope)) token = null;
      if (token == null || System.currentTimeMillis() >= expiresAt - windowMs) {
        String form = "grant_type=client_credentials&client_id=" + enc(System.getenv("PARTNER_CLIENT_ID"))
            + "&client_secret=" + enc(System.getenv("PARTNER_CLIENT_SECRET"))
            + "&scope=" + enc(authorised) + "&audience=" + enc(System.getenv("PARTNER_AUDIENCE"));
        HttpResponse<String> answer = http.send(
            HttpRequest.newBuilder(URI.create(System.getenv("PARTNER_TOKEN_URL")))
                .header("Content-Type", "application/x-www-form-urlencoded").header("Accept", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(form)).build(),
            HttpResponse.BodyHandlers.ofString());
        if (answer.statusCode() != 200) throw new IllegalStateException("token endpoint answered " + answer.statusCode());
        token = field(answer.body(), "access_token");
        partnerId = field(answer.body(), "partnerId");
        expiresAt = System.currentTimeMillis() + Long.parseLong(field(answer.body(), "expires_in")) * 1000;
        String scopeField = field(answer.body(), "scope");
        grantedScope = scopeField == null ? authorised : scopeField;
      }
      if (!granted(scope)) return null;
      return new String[] {token, partnerId};
    }
  }

  static int call(String method, String path, String scope, String body) throws Exception {
    String refused = null;
    for (int attempt = 1; attempt <= 3; attempt++) {
      long wait = notBefore - System.currentTimeMillis();
      if (wait > 0) Thread.sleep(wait);
      String[] held = token(refused, scope);
      if (held == null) return 0; // not granted now: not called; a later round asks again
      HttpRequest.Builder request = HttpRequest.newBuilder(
              URI.create(System.getenv("PARTNER_BASE_URL") + "/v3/partner/" + held[1] + "/" + path))
          .header("Authorization", "Bearer " + held[0]);
      if (body != null) request.header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
      HttpResponse<String> response = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
      int status = response.statusCode();
      if (status == 401 && attempt == 1) {
        refused = held[0];
        continue;
      }
      if (status == 429 || status == 503) {
        long seconds = Long.parseLong(response.headers().firstValue("Retry-After").orElse("1"));
        notBefore = Math.max(notBefore, System.currentTimeMillis() + seconds * 1000);
        if (body != null) return status; // a create is never sent twice
        continue;
      }
      return status;
    }
    return 0;
  }

  public static void main(String[] args) throws Exception {
    long end = System.currentTimeMillis() + Long.parseLong(System.getenv().getOrDefault("JOURNEY_SECONDS", "10")) * 1000;
    ExecutorService pool = Executors.newFixedThreadPool(2);
    int calls = 0;
    java.util.List<String[]> pending = new java.util.ArrayList<>();
    for (String[] item : new String[][] {
        {"loan_draft", "create:loan_draft"}, {"journals", "create:journal_update"}, {"repayments", "create:repayment"}}) {
      if ((" " + authorised + " ").contains(" " + item[1] + " ")) pending.add(item);
    }
    for (int i = 0; System.currentTimeMillis() < end; i++) {
      Future<Integer> first = pool.submit(() -> call("GET", "loans?limit=10", "read:loans", null));
      Future<Integer> second = pool.submit(() -> call("GET", "loans?limit=10&offset=10", "read:loans", null));
      first.get();
      second.get();
      calls += 2;
      if (i % 2 == 1) {
        for (String[] item : new java.util.ArrayList<>(pending)) {
          int status = call("POST", item[0], item[1], "{\"amount\":" + (1000 + i) + ",\"currency\":\"EUR\"}");
          calls++;
          if (status >= 200 && status < 300) pending.remove(item);
        }
      }
      Thread.sleep(300);
    }
    pool.shutdown();
    System.err.println("java journey: " + calls + " calls, " + pending.size() + " creates never succeeded");
  }
}
