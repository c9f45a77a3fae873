<?php
// What the application is and the framework services it loads: views, routes and the translator that
// Laravel's own error pages use; sessions and encryption for the form's routes (the CSRF token's cookie),
// which the article's routes never start; no cache or database. The key is this test app's own, fixed.
return [
    'name' => 'loadcmp-laravel',
    'env' => 'production',
    'debug' => false,
    'url' => 'http://127.0.0.1',
    'timezone' => 'UTC',
    'locale' => 'en',
    'fallback_locale' => 'en',
    'key' => 'base64:bG9hZGNtcC1sYXJhdmVsLWZvcm0ta2V5LTMyYnl0ZXM=',
    'cipher' => 'AES-256-CBC',
    'providers' => [
        Illuminate\Filesystem\FilesystemServiceProvider::class,
        Illuminate\Translation\TranslationServiceProvider::class,
        Illuminate\View\ViewServiceProvider::class,
        Illuminate\Encryption\EncryptionServiceProvider::class,
        Illuminate\Session\SessionServiceProvider::class,
        App\Providers\RouteServiceProvider::class,
    ],
    'aliases' => [],
];
