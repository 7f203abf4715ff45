"""Which IP addresses a webhook may call: globally reachable ones only, whatever form they are written in.

A webhook is an outgoing request to a URL an account chose, so it must never reach the site's own network:
loopback, private, link-local (the cloud metadata address 169.254.169.254), shared, reserved or multicast
addresses are refused, and so are the IPv6 forms that carry an IPv4 address inside and reach it through a
translator or a tunnel: IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), SIIT (`::ffff:0:a.b.c.d`),
NAT64 (`64:ff9b::/96` with the embedded address checked; the local-use `64:ff9b:1::/48` always), 6to4
(`2002::/16`, the embedded address checked) and Teredo (`2001::/32`, always). The standard library's `ipaddress`
properties decide what is global; the embedded addresses are taken out explicitly, since `is_global` judges an
IPv6 address by its own prefix (`64:ff9b::a9fe:a9fe` is "global"). stdlib only.
"""

from __future__ import annotations

import ipaddress

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052: the IPv4 address is the last 32 bits
NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215: where the IPv4 address sits is the network's own
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")  # RFC 4291 (deprecated): ::a.b.c.d
IPV4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")  # RFC 2765 (SIIT): ::ffff:0:a.b.c.d


def embedded_ipv4(address: ipaddress.IPv6Address) -> tuple[str, ipaddress.IPv4Address] | None:
    """The IPv4 address an IPv6 address carries and reaches through a translator or tunnel, with the form's name;
    None when it carries none."""
    if address.ipv4_mapped is not None:
        return "IPv4-mapped", address.ipv4_mapped
    if address.sixtofour is not None:
        return "6to4", address.sixtofour
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in NAT64_WELL_KNOWN:
        return "NAT64", low32
    if address in IPV4_TRANSLATED:
        return "IPv4-translated", low32
    if address in IPV4_COMPATIBLE and int(address) > 1:  # not :: or ::1 (judged as themselves)
        return "IPv4-compatible", low32
    return None


def refusal(address: Address) -> str | None:
    """Why a webhook may not call `address`, or None when it is globally reachable in every form it takes."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.teredo is not None:
            return f"{address} is a Teredo address"
        if address in NAT64_LOCAL:
            return f"{address} is a local-use NAT64 address"
        carried = embedded_ipv4(address)
        if carried is not None:
            form, inner = carried
            if reason := _refusal_v4(inner):
                return f"{address} is the {form} form of {inner}, which {reason}"
            if form != "6to4" and form != "NAT64":  # the rest reach no one but the host itself or its own network
                return f"{address} is an {form} address"
        if address.is_site_local:
            return f"{address} is a site-local address"
    elif reason := _refusal_v4(address):
        return f"{address} {reason}"
    if address.is_multicast:
        return f"{address} is a multicast address"
    if not address.is_global or address.is_loopback or address.is_link_local or address.is_private:
        return f"{address} is a loopback, private, link-local or reserved address"
    return None


def _refusal_v4(address: ipaddress.IPv4Address) -> str | None:
    if address.is_loopback:
        return "is a loopback address"
    if address.is_link_local:
        return "is a link-local address (the cloud metadata service)"
    if address.is_multicast:
        return "is a multicast address"
    if address.is_unspecified or address.is_reserved or not address.is_global or address.is_private:
        return "is a private, shared or reserved address"
    return None
