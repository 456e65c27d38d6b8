-- bench/lib/post_json.lua - wrk script: every request is the KServe v2 JSON
-- inference the inferd-perf HTTP JSON scenarios send (identity_fp32, FP32 [1,16]).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,16],' ..
  '"data":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]}]}'
