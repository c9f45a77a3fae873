<?php

use App\Http\Controllers\PageController;
use Illuminate\Support\Facades\Route;

// Controllers, not closures, so that `route:cache` can cache every route.
Route::get('/sleep', [PageController::class, 'sleep']);
Route::get('/hello', [PageController::class, 'hello']);
