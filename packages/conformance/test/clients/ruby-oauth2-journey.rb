# A partner journey on the oauth2 gem (with Faraday): its client-credentials strategy, HTTP Basic
# client authentication, the token renewed 30 s before it expires (the gem's own `expired?` has no
# window of its own), a new token and one retry on 401, Retry-After honoured for every call. It asks for
# the scopes its client is authorised for (PARTNER_SCOPES, as the partner console says), reads the
# granted scope of each token answer (token.params['scope'], RFC 6749 §5.1) and, before an operation its
# token lacks, fetches a new token: never the operation called with a token lacking its scope. It lists
# loans and makes each authorised create until it succeeded once (a create answered 503 is never re-sent).
require 'json'
require 'oauth2'
require 'uri'

env = ENV
token_url = URI(env.fetch('PARTNER_TOKEN_URL'))
client = OAuth2::Client.new(
  env.fetch('PARTNER_CLIENT_ID'), env.fetch('PARTNER_CLIENT_SECRET'),
  site: "#{token_url.scheme}://#{token_url.host}:#{token_url.port}", token_url: token_url.path,
  auth_scheme: :basic_auth
)
authorised = env['PARTNER_SCOPES'].to_s.strip.empty? ? 'read:loans create:loan_draft' : env['PARTNER_SCOPES']
params = { scope: authorised, audience: env.fetch('PARTNER_AUDIENCE') }
token = nil
not_before = Time.now
window = 30

fetch = -> { client.client_credentials.get_token(params) }
# The token answer's scope (absent: what was asked) includes scope.
granted = ->(held, scope) { (held.params['scope'] || authorised).split.include?(scope) }
call = lambda do |method, path, scope, body = nil|
  3.times do |attempt|
    sleep([not_before - Time.now, 0].max)
    token = fetch.call if token.nil? || token.expires_at - window <= Time.now.to_i
    # A new token before an operation the held one lacks; still not granted: not called this round.
    token = fetch.call unless granted.call(token, scope)
    return 0 unless granted.call(token, scope)
    url = "#{env.fetch('PARTNER_BASE_URL')}/v3/partner/#{token.params['partnerId']}/#{path}"
    opts = body ? { body: JSON.generate(body), headers: { 'Content-Type' => 'application/json' } } : {}
    response = token.request(method, url, opts.merge(raise_errors: false))
    if response.status == 401 && attempt.zero?
      token = nil
      next
    end
    if [429, 503].include?(response.status)
      not_before = Time.now + Integer(response.headers['retry-after'] || '1')
      return response.status if method == :post
      next
    end
    return response.status
  end
  0
end

finish = Time.now + Integer(env.fetch('JOURNEY_SECONDS', '10'))
calls = 0
index = 0
creates = [%w[loan_draft create:loan_draft], %w[journals create:journal_update], %w[repayments create:repayment]]
pending = creates.select { |_, scope| authorised.split.include?(scope) }
while Time.now < finish
  call.call(:get, 'loans?limit=10', 'read:loans')
  calls += 1
  if index.odd?
    pending.dup.each do |path, scope|
      status = call.call(:post, path, scope, { amount: 1000 + index, currency: 'EUR' })
      calls += 1
      pending.delete([path, scope]) if (200..299).cover?(status)
    end
  end
  index += 1
  sleep 0.3
end
warn "ruby oauth2 journey: #{calls} calls, #{pending.size} creates never succeeded"
