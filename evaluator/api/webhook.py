"""The account's webhook: GET, PUT and DELETE /api/webhook/ (token or session; evaluator.services.webhooks).

PUT {"url": "https://...", "rotate_secret": false} sets it; the answer carries the signing secret, which a receiver
uses to check the Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature: v1,<base64
HMAC-SHA256 of id.timestamp.body>). `last_status` reports a public target's answers only.
"""

from __future__ import annotations

from typing import cast

from django.contrib.auth.models import User
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluator.models import Webhook
from evaluator.services.webhooks import SIGNATURE_HEADER, webhook_delete, webhook_set


class WebhookInputSerializer(serializers.Serializer):
    url = serializers.URLField(max_length=500)
    rotate_secret = serializers.BooleanField(default=False)


class WebhookSerializer(serializers.ModelSerializer):
    signature_header = serializers.SerializerMethodField()

    class Meta:
        model = Webhook
        fields = ["url", "secret", "active", "signature_header", "created_at", "last_delivery_at", "last_status"]

    def get_signature_header(self, obj: Webhook) -> str:
        return SIGNATURE_HEADER


class WebhookApi(APIView):
    """The caller's webhook, called when one of their submissions finishes."""

    permission_classes = [IsAuthenticated]

    @extend_schema(summary="Your webhook", responses={200: WebhookSerializer})
    def get(self, request: Request) -> Response:
        hook = Webhook.objects.filter(user=cast(User, request.user)).first()  # IsAuthenticated: never anonymous
        if hook is None:
            return Response({"detail": "no webhook set"}, status=status.HTTP_404_NOT_FOUND)
        return Response(WebhookSerializer(hook).data)

    @extend_schema(summary="Set your webhook", request=WebhookInputSerializer, responses={200: WebhookSerializer})
    def put(self, request: Request) -> Response:
        data = WebhookInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            hook = webhook_set(user=request.user, **data.validated_data)
        except ValueError as exc:
            return Response({"url": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        return Response(WebhookSerializer(hook).data)

    @extend_schema(summary="Remove your webhook", responses={204: None})
    def delete(self, request: Request) -> Response:
        webhook_delete(user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
