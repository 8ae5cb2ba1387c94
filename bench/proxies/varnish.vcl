# Varnish in front of the bench origin (bench/proxies.sh); it caches by
# the origin's Cache-Control, as shipped.
vcl 4.1;

backend origin {
    .host = "127.0.0.1";
    .port = "@ORIGIN_PORT@";
}
