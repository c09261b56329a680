# A partner journey on the oauth2 gem (with Faraday): its client-credentials strategy, HTTP Basic
# client authentication, the token renewed 30 s before it expires (the gem's own `expired?` has no
# window of its own), a new token and one retry on 401, Retry-After honoured for every call.
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
params = { scope: 'read:loans create:loan_draft', audience: env.fetch('PARTNER_AUDIENCE') }
token = nil
not_before = Time.now
window = 30

fetch = -> { client.client_credentials.get_token(params) }
call = lambda do |method, path, body = nil|
  3.times do |attempt|
    sleep([not_before - Time.now, 0].max)
    token = fetch.call if token.nil? || token.expires_at - window <= Time.now.to_i
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
while Time.now < finish
  call.call(:get, 'loans?limit=10')
  calls += 1
  if index % 8 == 1
    call.call(:post, 'loan_draft', { amount: 1000 + index, currency: 'EUR' })
    calls += 1
  end
  index += 1
  sleep 0.3
end
warn "ruby oauth2 journey: #{calls} calls"
